"""Generated sections of a documentation page: the text between ``<!-- NAME:start ... -->`` and
``<!-- NAME:end -->``, written by a tool and committed, so the page reads whole in the
repository (and in an installed package's sources) and a test can tell when it is stale."""

from __future__ import annotations


class PageSectionError(ValueError):
    """A page lacks the markers of a generated section; the message names them."""


def markers(name: str) -> tuple[str, str]:
    """The start marker's opening (a note may follow it before ``-->``) and the end marker."""
    return f"<!-- {name}:start", f"<!-- {name}:end -->"


def _split(page: str, name: str) -> tuple[str, str, str]:
    """The page before the section (start marker's line included), the section, and the rest
    (end marker included)."""
    start, end = markers(name)
    if start not in page or end not in page:
        raise PageSectionError(f"the page has no {start} ... {end} section")
    before, rest = page.split(start, 1)
    marker_line, rest = rest.split("\n", 1)
    inside, after = rest.split(end, 1)
    return f"{before}{start}{marker_line}\n", inside, f"{end}{after}"


def section(page: str, name: str) -> str:
    """The generated text of section ``name`` (blank lines around it stripped)."""
    return _split(page, name)[1].strip("\n") + "\n"


def with_section(page: str, name: str, content: str) -> str:
    """The page with section ``name`` replaced by ``content`` (blank lines around it, so that
    Markdown reads it apart from the markers)."""
    before, _, after = _split(page, name)
    return f"{before}\n{content.strip(chr(10))}\n\n{after}"


def is_current(page: str, name: str, content: str) -> bool:
    """Whether section ``name`` of the page holds ``content`` (blank lines around it aside)."""
    return section(page, name) == content.strip("\n") + "\n"
