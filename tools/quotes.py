"""Check that every quotation of a paper in our Markdown is word for word in the paper's text.

    python tools/quotes.py PAPERS_DIR                  # docs/fidelity.md and docs/protocol.md
                                                       # (of this repository, from any folder)
    python tools/quotes.py PAPERS_DIR docs/results.md  # other pages

PAPERS_DIR holds the papers as plain text, one ``.txt`` file each (formulas may keep their
LaTeX); the repository does not ship them. The tool prints every quotation found in none of
them, with its file and line, and exits 1 if there is any, 0 otherwise (2 on a usage error).

What counts as a quotation. Every passage in double quotes, straight ("...") or curly
(“...”), of at least four words, or of at least six CJK characters, outside code (fenced
blocks and inline code spans are ignored). A shorter passage ("PCA", "the study") is a term,
not checked. The one exception is our translation of a Chinese quotation, which by
convention comes right after the words ``our translation:`` and is not looked for. So the
rule for whoever writes these pages is: double quotes of four words or more are for a paper's
words only; anything else quoted (a column header, a config value, an error message) goes in
backticks or italics.

A quotation may leave words out with an ellipsis (``…`` or ``...``): each part between the
ellipses must then be found, in any file.

How the two sides are compared. Both are normalised, then compared with every whitespace
character removed (the text conversion spaces formulas apart from their neighbours,
``$+0.0316$ ,``, and a quotation may write ``c=0.1, r=0.4`` for ``$c=0.1,r=0.4$``):

- LaTeX is reduced to plain text: math delimiters (``$``, ``\\(``, ``\\)``, ``\\[``, ``\\]``)
  go; a font or text command keeps its argument (``\\mathrm{loss}`` -> ``loss``); a symbol
  command becomes its character (``\\times`` -> ``×``, ``\\pm`` -> ``±``, ``\\tau`` -> ``τ``);
  spacing and sizing commands (``\\,``, ``\\left``) go; braces go, so ``10^{-5}`` reads
  ``10^-5`` and ``5\\times 10^{-5}`` matches the quotation ``5×10^-5`` (not ``5e-5``);
- quotes are unified (curly to straight, single and double), and so are dashes and minus
  signs (en dash, em dash, minus, hyphen variants to ``-``);
- Markdown emphasis markers and table-cell escapes in the quotation (``*``, ``\\|``) go.

Everything else must match exactly, case included.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILES = ("docs/fidelity.md", "docs/protocol.md")  # relative to the repository
MIN_WORDS = 4
MIN_CJK = 6
TRANSLATION = re.compile(r"our\s+translation:\s*$")

# A quotation: straight or curly double quotes, within one paragraph (no blank line inside).
QUOTE = re.compile(r'"(?P<s>[^"\n]*(?:\n(?!\s*\n)[^"\n]*)*)"|“(?P<c>[^”]*?)”')
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
ELLIPSIS = re.compile(r"…|\.\.\.")

# LaTeX commands whose argument is kept as text.
TEXT_COMMANDS = (
    "mathrm",
    "mathbf",
    "mathcal",
    "mathbb",
    "mathit",
    "mathsf",
    "boldsymbol",
    "text",
    "textrm",
    "textbf",
    "textit",
    "operatorname",
    "bar",
    "hat",
    "tilde",
    "rm",
)
TEXT_COMMAND = re.compile(r"\\(?:" + "|".join(TEXT_COMMANDS) + r")\s*\{([^{}]*)\}")
# LaTeX symbol commands and the character each stands for.
SYMBOLS = {
    "times": "×",
    "pm": "±",
    "cdot": "·",
    "tau": "τ",
    "Delta": "Δ",
    "delta": "δ",
    "alpha": "α",
    "beta": "β",
    "pi": "π",
    "ell": "ℓ",
    "leq": "≤",
    "le": "≤",
    "geq": "≥",
    "ge": "≥",
    "neq": "≠",
    "in": "∈",
    "to": "→",
    "rightarrow": "→",
    "infty": "∞",
    "approx": "≈",
}
SYMBOL = re.compile(r"\\(" + "|".join(sorted(SYMBOLS, key=len, reverse=True)) + r")(?![A-Za-z])")
# What else of LaTeX is dropped: delimiters, escaped braces' backslash, spacing, other commands.
DELIMITERS = re.compile(r"\\[()\[\]]|\$")
SPACING = re.compile(r"\\[,;:! ]")
OTHER_COMMAND = re.compile(r"\\[A-Za-z]+")
QUOTE_CHARS = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'"})
DASHES = re.compile(r"[‐‑‒–—―−]")
WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Quotation:
    """One quotation of a Markdown file."""

    path: Path
    line: int  # of its opening quote, from 1
    text: str  # as written, between the quotes


def normalise(text: str) -> str:
    """``text`` as it is compared: LaTeX reduced to plain text, quotes and dashes unified,
    every whitespace character removed."""
    text = DELIMITERS.sub("", text)
    previous = None
    while previous != text:  # nested text commands, innermost first
        previous = text
        text = TEXT_COMMAND.sub(r"\1", text)
    text = SYMBOL.sub(lambda match: SYMBOLS[match.group(1)], text)
    text = text.replace("\\{", "{").replace("\\}", "}").replace("\\|", "|")
    text = SPACING.sub("", text)
    text = OTHER_COMMAND.sub("", text)
    text = text.replace("{", "").replace("}", "").replace("*", "")
    text = DASHES.sub("-", text.translate(QUOTE_CHARS))
    return WHITESPACE.sub("", text)


def is_checked(text: str) -> bool:
    """Whether a quoted passage is long enough to be a quotation rather than a term."""
    return len(text.split()) >= MIN_WORDS or len(CJK.findall(text)) >= MIN_CJK


def _prose(markdown: str) -> str:
    """``markdown`` with code blanked out (fences' lines and inline spans turned to spaces),
    so that offsets and line numbers stay those of the file."""
    lines = markdown.split("\n")
    fence: str | None = None
    for index, line in enumerate(lines):
        match = FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            lines[index] = " " * len(line)
        elif match:
            fence = match.group(1)
            lines[index] = " " * len(line)
        else:
            lines[index] = CODE_SPAN.sub(lambda span: " " * len(span.group(0)), line)
    return "\n".join(lines)


def quotations(path: Path) -> Iterator[Quotation]:
    """The quotations of one Markdown file that are checked (long enough, not a translation)."""
    prose = _prose(path.read_text(encoding="utf-8"))
    for match in QUOTE.finditer(prose):
        text = match.group("s") if match.group("s") is not None else match.group("c")
        before = prose[max(0, match.start() - 40) : match.start()]
        if not is_checked(text) or TRANSLATION.search(before):
            continue
        yield Quotation(path, prose.count("\n", 0, match.start()) + 1, text)


def found(quotation: str, papers: Sequence[str]) -> bool:
    """Whether every part of ``quotation`` (split at ellipses) is in one of the normalised
    ``papers``."""
    parts = [normalise(part) for part in ELLIPSIS.split(quotation)]
    return all(any(part in paper for paper in papers) for part in parts if part)


def load_papers(folder: Path) -> list[str]:
    """The normalised text of every ``.txt`` file in ``folder``."""
    return [normalise(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.txt"))]


def missing(papers_dir: Path, files: Sequence[Path]) -> list[Quotation]:
    """The quotations of ``files`` that none of the papers in ``papers_dir`` contains."""
    papers = load_papers(papers_dir)
    if not papers:
        raise FileNotFoundError(f"{papers_dir}: no .txt file to look quotations up in")
    return [q for path in files for q in quotations(path) if not found(q.text, papers)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("papers_dir", type=Path, help="folder of the papers as .txt files")
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        default=[REPO / name for name in DEFAULT_FILES],
        help=f"Markdown files to check (default: {' and '.join(DEFAULT_FILES)})",
    )
    args = parser.parse_args(argv)
    if not args.papers_dir.is_dir():
        parser.error(f"{args.papers_dir} is not a folder")
    try:
        bad = missing(args.papers_dir, args.files)
    except (FileNotFoundError, UnicodeDecodeError) as error:
        parser.error(str(error))
    for quotation in bad:
        text = WHITESPACE.sub(" ", quotation.text)
        print(f'{quotation.path}:{quotation.line}: not in the papers: "{text}"')
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
