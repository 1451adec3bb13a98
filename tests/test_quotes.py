"""tools/quotes.py: every quotation of a paper in our Markdown is word for word in its text.

The papers are not in the repository: the synthetic tests make a small papers folder of their
own, and the test on the real docs runs only where ``HIERBENCH_PAPERS`` names the folder that
holds the papers' text.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools/quotes.py"
SPEC = importlib.util.spec_from_file_location("quotes", TOOL)
assert SPEC is not None and SPEC.loader is not None
quotes = importlib.util.module_from_spec(SPEC)
sys.modules["quotes"] = quotes  # dataclasses look their module up by name
SPEC.loader.exec_module(quotes)

STUDY = (
    "3.4 Controlled Factorial\n\n"
    "They share batch size 128, AdamW with learning rate $5\\times 10^{-5}$ and weight decay "
    "$10^{-4}$ , and a fixed 100-epoch budget. Four new hyperbolic configurations are trained "
    "for 84 epochs and compared with the previously accepted matched $c=0.1,r=0.4$ and "
    "Euclidean controls. The loss is $\\Delta_{\\mathrm{loss}}^{E}=+0.048670\\pm 0.000409$ "
    "across seeds; the anchor’s “group” stays in the denominator.\n"
)
DIGEST = (
    "关键设计¶\n"
    "- 大 bounding box 若显著包围小 bounding box（≥80% 面积重叠），则构成 entailment 关系\n"
    "- 对每个查询图像 \\(I\\)，预计算其层次树 \\(\\mathcal{H}_I\\) 的标签分布 \\(\\mathbf{h}_I\\)\n"
)


@pytest.fixture
def papers(tmp_path: Path) -> Path:
    """A papers folder: a study with LaTeX, a digest in Chinese, and a README that is no paper."""
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "study.txt").write_text(STUDY, encoding="utf-8")
    (folder / "digest.txt").write_text(DIGEST, encoding="utf-8")
    (folder / "README.md").write_text('"the README is not searched at all"', encoding="utf-8")
    return folder


def page(tmp_path: Path, text: str) -> Path:
    """A Markdown page in ``tmp_path`` with ``text``."""
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


def run(papers: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    """The tool as a command."""
    command = [sys.executable, str(TOOL), str(papers), *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_a_verbatim_quotation_is_found_and_the_tool_exits_0(papers: Path, tmp_path: Path):
    path = page(
        tmp_path,
        '| S8 | "Four new hyperbolic configurations are trained for 84 epochs" (its S10) |\n',
    )
    assert quotes.missing(papers, [path]) == []
    result = run(papers, path)
    assert result.returncode == 0 and result.stdout == ""


def test_a_misquotation_is_reported_with_its_file_and_line(papers: Path, tmp_path: Path):
    text = (
        "Intro.\n\n"
        'The paper says "Four new configurations are trained for 84 epochs" (its S10), and\n'
        'it says "the previously accepted matched\n'
        'controls were retrained" too.\n'
    )
    path = page(tmp_path, text)
    bad = quotes.missing(papers, [path])
    assert [(q.line, q.text) for q in bad] == [
        (3, "Four new configurations are trained for 84 epochs"),
        (4, "the previously accepted matched\ncontrols were retrained"),
    ]
    result = run(papers, path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f'{path}:3: not in the papers: "Four new configurations are trained for 84 epochs"',
        f'{path}:4: not in the papers: "the previously accepted matched controls were retrained"',
    ]


def test_latex_is_read_as_plain_text(papers: Path, tmp_path: Path):
    text = (
        '"AdamW with learning rate 5×10^-5 and weight decay 10^-4" (its § 3.4);\n'
        '"compared with the previously accepted matched c=0.1, r=0.4 and Euclidean controls";\n'
        '"The loss is Δ_loss^E=+0.048670 ± 0.000409 across seeds";\n'
        'curly quotes and dashes: “the anchor\'s "group" stays in the denominator”.\n'
    )
    assert quotes.missing(papers, [page(tmp_path, text)]) == []
    # 5e-5 is another way to write the number, not the paper's words
    wrong = page(tmp_path, '"AdamW with learning rate 5e-5 and weight decay 10^-4"\n')
    assert [q.text for q in quotes.missing(papers, [wrong])] == [
        "AdamW with learning rate 5e-5 and weight decay 10^-4"
    ]


def test_normalise_strips_latex_and_unifies_quotes_and_dashes():
    assert quotes.normalise("$5\\times 10^{-5}$") == quotes.normalise("5×10^-5") == "5×10^-5"
    assert quotes.normalise("\\(\\mathcal{H}_I\\)") == "H_I"
    assert quotes.normalise("768–256—32 − 1 “a” ‘b’") == "768-256-32-1\"a\"'b'"
    assert quotes.normalise("$\\{0.07,0.10\\}$") == quotes.normalise("{0.07, 0.10}")
    assert quotes.normalise("Case") != quotes.normalise("case")


def test_cjk_quotations_and_their_translations(papers: Path, tmp_path: Path):
    text = (
        '"大 bounding box 若显著包围小 bounding box（≥80% 面积重叠），'
        '则构成 entailment 关系" (our\n'
        'translation: "a large box that substantially encloses a small box forms an entailment '
        'relation"); "对每个查询图像 I，预计算其层次树 H_I 的标签分布 h_I" (our translation: "for '
        'each query image I, precompute h_I").\n'
    )
    assert quotes.missing(papers, [page(tmp_path, text)]) == []
    wrong = page(tmp_path, '"大 bounding box 若包围小 bounding box（≥80% 较小者面积）"\n')
    assert len(quotes.missing(papers, [wrong])) == 1
    # six CJK characters make a quotation, five do not
    assert quotes.is_checked("构成关系的树") and not quotes.is_checked("构成关系树")


def test_short_terms_code_and_ellipses(papers: Path, tmp_path: Path):
    text = (
        'A term, "the study", and "PCA" are not quotations.\n\n'
        '`"a config value in code is not a quotation"`\n\n'
        "```text\n"
        '"nor is an error message in a fenced block"\n'
        "```\n\n"
        '"Four new hyperbolic configurations … compared with the previously accepted matched"\n'
    )
    assert quotes.missing(papers, [page(tmp_path, text)]) == []
    wrong = page(tmp_path, '"Four new hyperbolic configurations … compared with every control"\n')
    assert len(quotes.missing(papers, [wrong])) == 1


def test_a_papers_folder_without_text_is_a_usage_error(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run(empty, page(tmp_path, "nothing\n"))
    assert result.returncode == 2 and "no .txt file" in result.stderr


@pytest.mark.skipif(
    not os.environ.get("HIERBENCH_PAPERS"),
    reason="HIERBENCH_PAPERS does not name the folder of the papers' text (not shipped)",
)
def test_the_docs_quote_the_real_papers_word_for_word():
    papers = Path(os.environ["HIERBENCH_PAPERS"])
    assert papers.is_dir(), f"HIERBENCH_PAPERS={papers} is not a folder"
    files = [REPO / name for name in quotes.DEFAULT_FILES]
    checked = [q for path in files for q in quotes.quotations(path)]
    assert len(checked) > 20, "the docs' quotations were not found"
    bad = quotes.missing(papers, files)
    assert bad == [], "\n".join(f"{q.path}:{q.line}: {q.text}" for q in bad)
