"""The README and the user guide (docs/): every command block runs, or says why it does not.

The convention, for whoever writes a page: a fenced block whose info string is ``bash``, ``sh``
or ``console`` is a command block and is run by :func:`test_every_runnable_command_block_runs`
(in a copy of the repository after a complete tiny run, the venv on PATH, ``set -euo
pipefail``), unless the line just before its fence is ``<!-- not run: REASON -->`` with a
non-empty reason (it needs a cluster, a GPU, the network, 45 minutes).

Every other fence names what it holds (``text`` for output and file listings, ``yaml``,
``python``, ``json``), so a fence without an info string is an error; in a ``console`` block
only the lines that start with ``$ `` are commands. ``python tests/test_docs.py`` lists every
command block and whether the tests run it. The CLI reference page is generated from the parser
by tools/reference_pages.py and committed; an MkDocs hook (docs/hooks/cli_reference.py) stops a
build when it is stale, tested here too.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from table_collections import example_collection_tree

REPO = Path(__file__).resolve().parents[1]
COMMAND_INFOS = frozenset({"bash", "sh", "console"})
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(?P<reason>.*?)-->\s*$")
# A comment that looks like a marker but is not one (no colon, say) must not pass silently.
NEAR_MARKER = re.compile(r"<!--\s*not[\s_-]*run", re.IGNORECASE)
# One block may take this long in the built copy; the tiny run makes every runnable block a
# matter of seconds (a no-op snakemake, an audit, a CLI call), but for the own-dataset page's,
# which runs a smoke-sized study on the example collection (about 1.5 min on 2 cores).
BLOCK_TIMEOUT_S = 120
STUDY_TIMEOUT_S = 600


def _example_tree(repo: Path) -> None:
    """The own-dataset page's ``beetles/`` tree: the embedded example collection as folders."""
    if not (repo / "beetles").exists():
        example_collection_tree(repo / "beetles")


# What a page's blocks find in place before they run (the reader's own files).
PAGE_SETUP = {"docs/own-dataset.md": _example_tree}


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str  # relative to the repository
    line: int  # the opening fence's line, from 1
    info: str  # the info string's first word ("" when there is none)
    text: str  # the block's lines, the fence's indentation removed
    marker: str | None  # the line before the fence, when it looks like a not-run marker

    @property
    def is_command(self) -> bool:
        return self.info in COMMAND_INFOS

    @property
    def skip_reason(self) -> str | None:
        """The marker's reason (stripped), or None when the block has no proper marker."""
        if self.marker is None:
            return None
        match = NOT_RUN.match(self.marker)
        return match.group("reason").strip() if match else None

    @property
    def script(self) -> str:
        """The commands: the whole block, or a console block's ``$ `` lines."""
        if self.info != "console":
            return self.text
        return "\n".join(
            line[2:] for line in self.text.splitlines() if line.startswith("$ ")
        ).strip()

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The README and every page of the guide."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: Path, root: Path = REPO) -> list[Block]:
    """Every fenced block of a Markdown file, in order (its page named relative to ``root``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening.group("indent")), opening.group("fence")
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            closing = FENCE.match(lines[end])
            if (
                closing
                and closing.group("fence")[0] == fence[0]
                and len(closing.group("fence")) >= len(fence)
                and not closing.group("info").strip()
            ):
                break
            body.append(lines[end][indent:] if lines[end][:indent].isspace() else lines[end])
            end += 1
        before = lines[index - 1] if index else ""
        info = opening.group("info").strip().split(" ")[0].strip("{}.")
        found.append(
            Block(
                page=str(path.relative_to(root)),
                line=index + 1,
                info=info,
                text="\n".join(body),
                marker=before if NEAR_MARKER.search(before) else None,
            )
        )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks(path)]


def command_blocks() -> list[Block]:
    return [block for block in all_blocks() if block.is_command]


def runnable_blocks() -> list[Block]:
    return [block for block in command_blocks() if block.marker is None]


# ---- fast: every block is what it says it is


def test_the_guide_has_its_pages_and_they_have_command_blocks():
    names = {path.relative_to(REPO).as_posix() for path in pages()}
    for page in (
        "README.md",
        "docs/getting-started.md",
        "docs/configuration.md",
        "docs/own-dataset.md",
        "docs/extend.md",
        "docs/real-data.md",
        "docs/cluster-gpu.md",
        "docs/reliability.md",
        "docs/rebuilds.md",
        "docs/comparing.md",
        "docs/cli.md",
    ):
        assert page in names, page
    assert command_blocks()


def _progress_captures(page: str) -> list[str]:
    """A page's text blocks that show what ``hierbench status`` and ``runs`` print."""
    return [
        block.text
        for block in blocks(REPO / page)
        if block.info == "text" and block.text.startswith("$ hierbench status ")
    ]


def test_the_readme_and_the_guide_show_one_capture_of_status_and_runs():
    readme, guide = _progress_captures("README.md"), _progress_captures("docs/getting-started.md")
    assert len(readme) == 1 and readme == guide
    assert "jobs running now, with their last log line:" in readme[0]
    assert "$ hierbench runs\n" in readme[0] and "time left: about" in readme[0]


def test_every_fence_names_what_it_holds():
    unnamed = [str(block) for block in all_blocks() if not block.info]
    assert not unnamed, (
        "fences without an info string (use bash/sh/console for commands, text for output): "
        f"{unnamed}"
    )


def test_every_command_block_runs_or_says_why_not():
    """Each command block is runnable or marked with a reason; the runnable ones are listed."""
    bad = [
        f"{block}: {block.marker.strip()!r}"
        for block in command_blocks()
        if block.marker is not None and not block.skip_reason
    ]
    assert not bad, f"a not-run marker needs a reason, <!-- not run: REASON -->: {bad}"
    runnable = runnable_blocks()
    print("runnable command blocks:", ", ".join(map(str, runnable)))
    assert any(block.page == "README.md" for block in runnable), "the README's first run"
    assert all(block.script for block in runnable), "a runnable block without commands"


def test_no_runnable_block_installs_anything():
    """``make`` (whose targets first bring .venv up to date) and ``pip`` in a runnable block
    would install into the environment the tests run in: such blocks are marked not run."""
    installing = re.compile(r"^\s*(?:sudo\s+)?(?:make|pip3?|python3? -m pip)\b", re.MULTILINE)
    bad = [str(block) for block in runnable_blocks() if installing.search(block.script)]
    assert not bad, f"runnable blocks that call make or pip: {bad}"


def test_a_not_run_marker_stands_before_a_command_block():
    """A marker before anything else (prose, an output block) would be a stale one."""
    marked = {(block.page, block.line - 1) for block in command_blocks() if block.marker}
    stray = []
    for path in pages():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            key = (str(path.relative_to(REPO)), number)
            if NEAR_MARKER.search(line) and key not in marked:
                stray.append(f"{key[0]}:{number}")
    assert not stray, f"not-run markers that do not stand just before a command block: {stray}"


def test_the_block_reader_follows_the_convention(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```bash\necho one\n```\n\n<!-- not run: it needs a cluster -->\n```sh\nsbatch\n"
        "```\n\n<!-- not run: -->\n```bash\nx\n```\n\n<!-- not run it -->\n```bash\ny\n```\n\n"
        "1. a step\n\n   ```console\n   $ echo two\n   two\n   ```\n\n```text\n$ out\n```\n\n"
        "````text\n```bash\nnested\n```\n````\n"
    )
    found = blocks(page, root=tmp_path)
    infos = ["bash", "sh", "bash", "bash", "console", "text", "text"]
    assert [block.info for block in found] == infos
    first, cluster, empty, malformed, console, output, nested = found
    assert (first.marker, first.script) == (None, "echo one")
    assert cluster.skip_reason == "it needs a cluster"
    assert empty.marker is not None and empty.skip_reason == ""
    assert malformed.marker is not None and malformed.skip_reason is None
    assert console.script == "echo two" and console.text == "$ echo two\ntwo"
    assert not output.is_command and not nested.is_command
    assert nested.text == "```bash\nnested\n```"


# ---- fast: the CLI reference is the parser's


def _hook():
    spec = importlib.util.spec_from_file_location(
        "cli_reference", REPO / "docs" / "hooks" / "cli_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Every command below ``parser``: the choices of its subcommand group, recursively."""
    found: set[tuple[str, ...]] = set()
    groups = parser._subparsers._group_actions if parser._subparsers else []
    for group in groups:
        for name, child in group.choices.items():
            found.add((*words, name))
            found |= _commands(child, (*words, name))
    return found


def test_the_cli_reference_lists_every_subcommand_of_the_parser():
    from hierbench.cli import build_parser

    parser = build_parser()
    expected = _commands(parser, ("hierbench",))
    assert ("hierbench", "taxonomy", "cub") in expected  # nested ones are walked
    reference = _hook().reference(parser)
    headings = re.findall(r"^#{2,6} (hierbench(?: [\w-]+)*)$", reference, re.MULTILINE)
    assert sorted(headings) == sorted(["hierbench", *(" ".join(words) for words in expected)])
    for words in expected:  # each command's own help, with its usage line
        assert re.search(rf"^usage: {re.escape(' '.join(words))}\b", reference, re.MULTILINE)


def test_the_generated_reference_pages_are_committed_current():
    """docs/cli.md and docs/errors.md hold their generated sections, so they read whole in the
    repository; the check names a stale one (python tools/reference_pages.py --write)."""
    checked = subprocess.run(
        [sys.executable, str(REPO / "tools/reference_pages.py")],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    cli = (REPO / "docs/cli.md").read_text(encoding="utf-8")
    assert "## hierbench audit" in cli and "### hierbench taxonomy cub" in cli
    assert "| mistake | command | the one line says |" in (REPO / "docs/errors.md").read_text()


def test_the_hook_passes_a_current_page_stops_a_stale_one_and_leaves_the_others():
    from mkdocs.exceptions import PluginError

    hook = _hook()
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    cli = SimpleNamespace(file=SimpleNamespace(src_path="cli.md"))
    other = SimpleNamespace(file=SimpleNamespace(src_path="index.md"))
    assert hook.on_page_markdown(page, cli, None, None) == page
    stale = page.replace("## hierbench audit", "## hierbench audit-old")
    with pytest.raises(PluginError, match=r"docs/cli\.md is stale"):
        hook.on_page_markdown(stale, cli, None, None)
    assert hook.on_page_markdown(stale, other, None, None) == stale


def test_mkdocs_names_the_hook_and_builds_strictly():
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True and config["docs_dir"] == "docs"
    assert config["hooks"] == ["docs/hooks/cli_reference.py", "docs/hooks/error_table.py"]


# ---- slow: each runnable block, in a copy of the repository after the tiny run


@pytest.fixture(scope="module")
def docs_repo(_built_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the built repository for every block of the module, in page order (as a
    reader would run them). It has no .venv: the blocks run with this interpreter's on PATH."""
    target = tmp_path_factory.mktemp("docs") / "repo"
    shutil.copytree(_built_repo, target, symlinks=True)
    return target


@pytest.mark.slow
@pytest.mark.parametrize("block", runnable_blocks(), ids=str)
def test_every_runnable_command_block_runs(block: Block, docs_repo: Path):
    bin_folder = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(docs_repo / "src"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONHASHSEED": "0",
    }
    env.pop("VIRTUAL_ENV", None)
    setup = PAGE_SETUP.get(block.page)
    if setup is not None:
        setup(docs_repo)
    result = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{block.script}\n"],
        cwd=docs_repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=STUDY_TIMEOUT_S if setup is not None else BLOCK_TIMEOUT_S,
    )
    assert result.returncode == 0, (
        f"{block} exited {result.returncode}:\n{block.script}\n---\n{result.stdout[-4000:]}"
    )


if __name__ == "__main__":
    for block in command_blocks():
        state = "runs" if block.marker is None else f"not run: {block.skip_reason}"
        print(f"{block}\t{block.info}\t{state}")
