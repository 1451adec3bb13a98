"""MkDocs hook: the CLI reference page (docs/cli.md) gets the help of every `hierbench` command.

The help comes from the parser itself (:func:`hierbench.cli.build_parser`), walked down every
level of subcommands (``hierbench taxonomy cub`` included), so a command added to the parser
appears in the guide without an edit and a changed option cannot drift from its description.
The reference is written into the page's generated section by ``python
tools/reference_pages.py --write`` and committed, so the page reads whole in the repository;
mkdocs.yml names this file under ``hooks:``, and :func:`on_page_markdown` stops the build when
the committed section is not what the parser gives now.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

PAGE = "cli.md"
SECTION = "cli-reference"  # the page's generated section (hierbench.runtools.page_sections)
# Help is wrapped at this width whatever the terminal that builds the guide.
WIDTH = 100


def subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("hierbench",)
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every subcommand below ``parser`` as (its words, its parser), depth first, in the
    parser's order; an alias (the same parser under a second name) is listed once."""
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        seen: set[int] = set()
        for name, child in action.choices.items():
            if id(child) in seen:
                continue
            seen.add(id(child))
            words = (*path, name)
            found.append((words, child))
            found.extend(subcommands(child, words))
    return found


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps help at the terminal's width (``COLUMNS``): fix it while formatting."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _section(words: tuple[str, ...], parser: argparse.ArgumentParser) -> str:
    heading = "#" * min(max(len(words), 2), 6)
    return f"{heading} {' '.join(words)}\n\n```text\n{parser.format_help().rstrip()}\n```\n"


def reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The Markdown of the reference: the top-level help, then each subcommand's, one heading
    per command (``## hierbench``, ``## hierbench audit``, ``### hierbench taxonomy cub``)."""
    if parser is None:
        from hierbench.cli import build_parser

        parser = build_parser()
    with _columns(WIDTH):
        sections = [_section(("hierbench",), parser)]
        sections += [_section(words, child) for words, child in subcommands(parser)]
    return "\n".join(sections)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs event: the CLI page passes when its committed reference is current; every other
    page passes through."""
    if page.file.src_path != PAGE:
        return markdown
    from hierbench.runtools.page_sections import is_current

    if not is_current(markdown, SECTION, reference()):
        from mkdocs.exceptions import PluginError

        raise PluginError(f"docs/{PAGE} is stale: run python tools/reference_pages.py --write")
    return markdown
