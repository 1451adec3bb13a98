"""MkDocs hook: the errors page (docs/errors.md) gets the table of the user's mistakes that the
tests feed to `hierbench` (tests/user_errors.py), each with the one line it answers, so the
table shows exactly what tests/test_user_errors.py checks. ``python tools/reference_pages.py
--write`` writes it into the page's generated section, committed; the build stops when that
section is stale."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PAGE = "errors.md"
SECTION = "error-table"  # the page's generated section (hierbench.runtools.page_sections)
CASES_FILE = Path(__file__).resolve().parents[2] / "tests" / "user_errors.py"


def _cases() -> tuple:
    """The cases of tests/user_errors.py."""
    spec = importlib.util.spec_from_file_location("user_errors", CASES_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module.CASES


def _cell(text: str) -> str:
    """Text for a Markdown table cell (a pipe would end the cell)."""
    return text.replace("|", "\\|")


def error_table() -> str:
    """A Markdown table: the mistake, the command, and what its one error line says."""
    rows = ["| mistake | command | the one line says |", "|---|---|---|"]
    for case in _cases():
        command = case.command.format(tmp=".", repo=".")
        rows.append(
            f"| {_cell(case.mistake)} | `hierbench {_cell(command)}` | {_cell(case.says)} |"
        )
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs event: the errors page passes when its committed table is current; every other
    page as it is."""
    if page.file.src_path != PAGE:
        return markdown
    from hierbench.runtools.page_sections import is_current

    if not is_current(markdown, SECTION, error_table()):
        from mkdocs.exceptions import PluginError

        raise PluginError(f"docs/{PAGE} is stale: run python tools/reference_pages.py --write")
    return markdown
