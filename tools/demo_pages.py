"""Put one demo run's numbers on the README and docs/results.md, or check that they are there.

    python tools/demo_pages.py                               # check: exit 1 naming each stale
                                                             # section or kept file
    python tools/demo_pages.py --run results --write         # keep this run's quoted files in
                                                             # docs/demo-run/ and rewrite the
                                                             # pages' generated sections

Run --write on the machine that made the run (it names this machine), with the run's commit
checked out or given with --commit. hierbench.runtools.demo_pages says what is kept.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from hierbench.runtools.demo_pages import keep_run, stale_sections, unkept_files

REPO = Path(__file__).resolve().parents[1]


def head_commit() -> str:
    """The checked-out commit, abbreviated."""
    result = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def main() -> int:
    """Check the pages against the kept run, or (--write) keep another run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="the demo's run folder (results)")
    parser.add_argument("--commit", help="the commit that made the run (default: HEAD)")
    parser.add_argument("--write", action="store_true", help="keep the run and rewrite the pages")
    args = parser.parse_args()
    if args.write:
        if args.run is None:
            parser.error("--write needs --run")
        keep_run(args.run, REPO, args.commit or head_commit())
        print(f"kept {args.run} in docs/demo-run/ and rewrote the pages' demo sections")
        return 0
    problems = [f"stale: {name}" for name in stale_sections(REPO)]
    problems += [f"not the run's bytes: docs/demo-run/{path}" for path in unkept_files(REPO)]
    print("\n".join(problems) or "the pages show the kept demo run")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
