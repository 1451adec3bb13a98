"""Taxonomies for CUB (Class -> Genus -> Family) and NABirds (Leaf -> Parent -> Supergroup).

CUB ships no genus or family, so each class is matched against a bird checklist
(exact normalised name, then guarded fuzzy match, then a versioned alias file, then
manual-verification entries). NABirds ships its own tree. Both are returned as one
generic table (``leaf``, ``middle``, ``high`` and integer codes) so later stages do not
care which dataset they read. A seeded structure-preserving shuffle gives the control
taxonomy.

One concern per module: :mod:`.checklist` (species checklists), :mod:`.aliases` (the alias
file), :mod:`.classlists` (class lists), :mod:`.matching` (names, matching, consistency),
:mod:`.levels` (level codes), :mod:`.report` (the match report), :mod:`.nabirds` (NABirds'
tree) and :mod:`.shuffle` (the control); :mod:`.errors` holds the error types. This package
re-exports their public names, so ``from hierbench.taxonomy import X`` works for each of them.
The datasets' own level names are :data:`hierbench.protocol.LEVEL_NAMES`.
"""

from __future__ import annotations

from .aliases import AliasEntry, AliasFile, default_schema_path, load_alias_file
from .checklist import (
    CHECKLIST_COLUMNS,
    DEFAULT_CHECKLIST,
    Checklist,
    canonical_family,
    checklist_fingerprint,
    load_checklist,
    load_checklist_csv,
    load_default_checklist,
)
from .classlists import read_cub_classes
from .errors import TaxonomyError, TaxonomyInputError
from .levels import CODE_COLUMNS, add_level_codes
from .matching import (
    DEFAULT_FUZZY_MARGIN,
    DEFAULT_FUZZY_THRESHOLD,
    MATCH_COLUMNS,
    METHODS,
    check_taxonomy_consistency,
    common_name_from_class,
    match_cub_classes,
    normalise_name,
)
from .nabirds import nabirds_taxonomy
from .report import match_report_markdown
from .shuffle import (
    DEFAULT_SHUFFLE_SEED,
    PAPER_FIXED_POINTS,
    fixed_point_bound,
    rehang_keeping,
    rehang_with_fewest_fixed_points,
    shuffle_taxonomy,
)

__all__ = [
    "CHECKLIST_COLUMNS",
    "CODE_COLUMNS",
    "DEFAULT_CHECKLIST",
    "DEFAULT_FUZZY_MARGIN",
    "DEFAULT_FUZZY_THRESHOLD",
    "DEFAULT_SHUFFLE_SEED",
    "MATCH_COLUMNS",
    "METHODS",
    "PAPER_FIXED_POINTS",
    "AliasEntry",
    "AliasFile",
    "Checklist",
    "TaxonomyError",
    "TaxonomyInputError",
    "add_level_codes",
    "canonical_family",
    "check_taxonomy_consistency",
    "checklist_fingerprint",
    "common_name_from_class",
    "default_schema_path",
    "fixed_point_bound",
    "load_alias_file",
    "load_checklist",
    "load_checklist_csv",
    "load_default_checklist",
    "match_cub_classes",
    "match_report_markdown",
    "nabirds_taxonomy",
    "normalise_name",
    "read_cub_classes",
    "rehang_keeping",
    "rehang_with_fewest_fixed_points",
    "shuffle_taxonomy",
]
