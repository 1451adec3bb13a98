"""Write, or check, the guide's generated reference sections: the help of every `hierbench`
command (docs/cli.md, from the parser) and the table of user errors (docs/errors.md, from the
cases tests/user_errors.py feeds to the command). They are committed, so the pages read whole
in the repository; the guide's build and a test stop when one is stale.

    python tools/reference_pages.py            # check: exit 1 naming each stale page
    python tools/reference_pages.py --write    # rewrite the sections
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from hierbench.runtools.page_sections import is_current, with_section

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _hook(name: str):
    """A hook module of docs/hooks/ by its file name."""
    spec = importlib.util.spec_from_file_location(name, DOCS / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def generated_pages() -> list[tuple[Path, str, Callable[[], str]]]:
    """Each page with a generated section: its path, the section's name, what it holds."""
    cli, errors = _hook("cli_reference"), _hook("error_table")
    return [
        (DOCS / cli.PAGE, cli.SECTION, cli.reference),
        (DOCS / errors.PAGE, errors.SECTION, errors.error_table),
    ]


def stale_pages(write: bool) -> list[Path]:
    """The pages whose section is not current (rewritten first when ``write``)."""
    stale = []
    for path, name, content in generated_pages():
        page, text = path.read_text(encoding="utf-8"), content()
        if not is_current(page, name, text):
            stale.append(path)
            if write:
                path.write_text(with_section(page, name, text), encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the stale sections")
    args = parser.parse_args(argv)
    stale = stale_pages(args.write)
    for path in stale:
        verb = "rewrote" if args.write else "stale (python tools/reference_pages.py --write):"
        print(f"{verb} {path.relative_to(DOCS.parent)}")
    return 0 if args.write or not stale else 1


if __name__ == "__main__":
    sys.exit(main())
