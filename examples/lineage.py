"""A dataset kind of one's own: a folder whose ``labels.csv`` gives every image its lineage.

Many collections arrive as one spreadsheet, a row per image naming its species, genus and
family (iNaturalist's exports and most museum catalogues look like this), not as the table
layout's two files. This kind reads such a folder as it is:

    labels.csv          file,species,genus,family[,split][,x,y,w,h]
    photos/...          the images, paths relative to the folder

(split: train or test; x, y, w, h: the subject's box in pixels; both optional)

and hands the study the two tables the table layout has, which hierbench then checks as it
checks images.csv and taxonomy.csv (a row of labels.csv is named by its line in errors).

Name it in a config (examples/lineage.yaml):

    plugins: {datasets: {lineage: examples/lineage.py:KIND}}
    datasets: {owls: {kind: lineage, root: path/to/folder, levels: [species, genus, family]}}
"""

from pathlib import Path

import pandas as pd

from hierbench.data.kinds import CollectionKind

LABELS = "labels.csv"
RENAMED = {"file": "path", "species": "class", "genus": "middle", "family": "high"}
OPTIONAL = ("split", "x", "y", "w", "h")


def read_labels(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The folder's images (path, class, split, box) and taxonomy (class, middle, high)."""
    labels = pd.read_csv(root / LABELS, dtype=str, keep_default_na=False).rename(columns=RENAMED)
    images = labels[["path", "class", *(c for c in OPTIONAL if c in labels.columns)]]
    taxonomy = labels[["class", "middle", "high"]].drop_duplicates()
    return images, taxonomy


KIND = CollectionKind(layout_files=(LABELS,), read=read_labels)
