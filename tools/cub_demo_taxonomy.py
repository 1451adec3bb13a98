"""Write resources/cub_demo_taxonomy.csv: the tree the CUB demo's birds are drawn from.

    python tools/cub_demo_taxonomy.py

The demo renders each class's look from its genus and family. It takes them from this shipped
file, made once by the default checklist match (the shipped class list and alias file, the
default thresholds), and never from the run's taxonomy: real photographs do not change when a
taxonomy setting does, so neither do the demo's, and a taxonomy edit never reruns the backbone.
Rerun this only to change what the demo's birds look like (every demo image changes).
"""

from __future__ import annotations

import csv
from pathlib import Path

from hierbench.taxonomy import (
    load_alias_file,
    load_checklist,
    match_cub_classes,
    read_cub_classes,
)

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "resources/cub_demo_taxonomy.csv"


def main() -> None:
    """Match the shipped class list with the defaults and write class, middle, high."""
    table = match_cub_classes(
        read_cub_classes(REPO / "resources/cub_classes.txt"),
        load_checklist("default", None),
        load_alias_file(REPO / "resources/cub_aliases.json", REPO / "schemas/aliases.schema.json"),
    )
    with TARGET.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["class", "middle", "high"])
        for row in table.sort_values("class_id").itertuples():
            writer.writerow([row.leaf, row.middle, row.high])
    print(f"wrote {TARGET.relative_to(REPO)}: {len(table)} classes")


if __name__ == "__main__":
    main()
