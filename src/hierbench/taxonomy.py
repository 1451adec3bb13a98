"""Taxonomies for CUB (Class -> Genus -> Family) and NABirds (Leaf -> Parent -> Supergroup).

CUB ships no genus or family, so each class is matched against a bird checklist
(exact normalised name, then guarded fuzzy match, then a versioned alias file, then
manual-verification entries). NABirds ships its own tree. Both are returned as one
generic table (``leaf``, ``middle``, ``high`` and integer codes) so later stages do not
care which dataset they read. A seeded structure-preserving shuffle gives the control
taxonomy.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import io
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
from rapidfuzz import fuzz, process

# Fuzzy acceptance on the default checklist: the correct fuzzy matches score >= 93.3 with
# margins >= 12.9, the best wrong candidate scores 87.0 (and several traps 80-85).
DEFAULT_FUZZY_THRESHOLD = 90.0
DEFAULT_FUZZY_MARGIN = 5.0
DEFAULT_SHUFFLE_SEED = 20260818

LEVEL_NAMES = {"cub": ("class", "genus", "family"), "nabirds": ("leaf", "parent", "supergroup")}
CHECKLIST_COLUMNS = ("common_name", "scientific_name", "family", "order")
METHODS = ("exact", "fuzzy", "alias", "manual")
MATCH_COLUMNS = (
    "class_id",
    "class_name",
    "common_name",
    "matched_name",
    "scientific_name",
    "genus",
    "family",
    "order",
    "method",
    "score",
    "runner_up",
    "runner_up_score",
)
CODE_COLUMNS = ("leaf_code", "middle_code", "high_code")

_DEFAULT_CSV = "data/processed/ebird_2024_taxonomy.csv"
Found = tuple[int, str, float, int | None, float]  # row, method, score, runner-up row, score
_DEFAULT_MAP = {
    "common_name": "ebird_common_name",
    "scientific_name": "scientific_name",
    "family": "ebird_family",
    "order": "ebird_order",
}


class TaxonomyError(ValueError):
    """A taxonomy input or result is wrong; the message says which file or class to fix."""


# ----------------------------------------------------------------------------- checklists


@dataclass(frozen=True, eq=False)
class Checklist:
    """A species checklist with canonical columns plus where it came from."""

    table: pd.DataFrame  # columns CHECKLIST_COLUMNS, one row per species
    source: str
    version: str
    sha256: str


def load_default_checklist() -> Checklist:
    """Load birdnames' eBird/Clements 2024 species list, the offline default."""
    resource = importlib.resources.files("birdnames").joinpath(_DEFAULT_CSV)
    data = resource.read_bytes()
    table = _table_from_bytes(data, f"birdnames/{_DEFAULT_CSV}", _DEFAULT_MAP, None, "")
    version = importlib.metadata.version("birdnames") + "/2024"
    return Checklist(table, "birdnames:ebird_2024", version, hashlib.sha256(data).hexdigest())


def load_checklist_csv(
    path: str | Path,
    columns: dict[str, str],
    *,
    category_column: str | None = None,
    category_value: str = "species",
    source: str | None = None,
    version: str | None = None,
) -> Checklist:
    """Load a user checklist CSV, mapping its column names onto the canonical ones.

    ``columns`` maps canonical names (common_name, scientific_name, family, optional order)
    to CSV headers. With ``category_column`` only rows whose value equals ``category_value``
    are kept (eBird: ``CATEGORY`` == ``species``).
    """
    path = Path(path)
    unknown = sorted(set(columns) - set(CHECKLIST_COLUMNS))
    if unknown:
        raise TaxonomyError(
            f"{path}: unknown canonical column(s) {unknown}; use {list(CHECKLIST_COLUMNS)}"
        )
    data = path.read_bytes()
    table = _table_from_bytes(data, str(path), columns, category_column, category_value)
    digest = hashlib.sha256(data).hexdigest()
    return Checklist(
        table, source or f"csv:{path.name}", version or f"sha256:{digest[:12]}", digest
    )


DEFAULT_CHECKLIST = "default"


def load_checklist(spec: str, columns: dict[str, str] | None = None) -> Checklist:
    """Load the checklist a config names: "default" (birdnames eBird 2024) or a CSV path.

    ``columns`` holds the CSV's column names for common_name, scientific_name, family and
    order (empty: the checklist has none), plus category (empty: every row is a species) and
    species_value (the category value of species rows).
    """
    if spec == DEFAULT_CHECKLIST:
        return load_default_checklist()
    columns = columns or {}
    mapping = {key: columns[key] for key in CHECKLIST_COLUMNS if columns.get(key)}
    category = columns.get("category") or None
    return load_checklist_csv(
        spec,
        mapping,
        category_column=category,
        category_value=columns.get("species_value", "species"),
    )


def checklist_fingerprint(spec: str) -> str:
    """SHA256 of the checklist's bytes: a DAG parameter, so a changed checklist reruns matching."""
    if spec == DEFAULT_CHECKLIST:
        return hashlib.sha256(
            importlib.resources.files("birdnames").joinpath(_DEFAULT_CSV).read_bytes()
        ).hexdigest()
    path = Path(spec)
    if not path.is_file():
        raise TaxonomyError(
            f"checklist file {spec} does not exist (config key datasets.cub.taxonomy.checklist)"
        )
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _table_from_bytes(
    data: bytes, label: str, columns: dict[str, str], category: str | None, value: str
) -> pd.DataFrame:
    """Parse checklist CSV bytes into the canonical, validated species table."""
    try:
        raw = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaxonomyError(f"{label}: not UTF-8 ({exc}); re-save the checklist as UTF-8") from exc
    needed = {c: columns.get(c) for c in CHECKLIST_COLUMNS}
    for canon in ("common_name", "scientific_name", "family"):
        if needed[canon] is None:
            raise TaxonomyError(f"{label}: no CSV column given for required '{canon}'")
    wanted = [c for c in [*needed.values(), category] if c is not None]
    for col in wanted:
        if col not in raw.columns:
            raise TaxonomyError(
                f"{label}: column '{col}' not found; columns are {list(raw.columns)}"
            )
    if category is not None:
        raw = raw[raw[category].str.strip() == value]
    table = pd.DataFrame({c: raw[h].str.strip() if h else "" for c, h in needed.items()})
    table["family"] = table["family"].map(canonical_family)
    return _validate_table(table.reset_index(drop=True), label)


def _validate_table(table: pd.DataFrame, label: str) -> pd.DataFrame:
    """Reject empty checklists, blank names and duplicated scientific names."""
    if table.empty:
        raise TaxonomyError(f"{label}: no species rows (check the category filter)")
    for col in ("common_name", "scientific_name", "family"):
        blank = table.index[table[col] == ""].tolist()
        if blank:
            raise TaxonomyError(
                f"{label}: {len(blank)} species row(s) with empty '{col}' "
                f"(0-based species rows {blank[:5]})"
            )
    dup = sorted(table.loc[table["scientific_name"].duplicated(), "scientific_name"])
    if dup:
        raise TaxonomyError(f"{label}: duplicated scientific names {dup[:5]}")
    return table


# -------------------------------------------------------------------------- name handling


def canonical_family(value: str) -> str:
    """Strip a trailing '(gloss)': 'Parulidae (New World Warblers)' is 'Parulidae'."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", value).strip()


def common_name_from_class(class_name: str) -> str:
    """Turn a CUB folder name ('001.Black_footed_Albatross') into 'Black footed Albatross'."""
    name = re.sub(r"^\d+\.", "", class_name.strip())
    return " ".join(name.replace("_", " ").split())


def normalise_name(name: str) -> str:
    """Matching key: lowercase ASCII letters and digits only, possessive "'s" dropped.

    CUB writes possessives without the "'s" ("Brewer_Blackbird", "Anna_Hummingbird",
    "Chuck_will_Widow"), so an apostrophe-marked "'s"/"’s" is removed before punctuation:
    "Brewer's Blackbird" and "Brewer Blackbird" both give "brewerblackbird". A bare "s"
    cannot be told from a name ending in s, so "Forsters Tern" keeps it (fuzzy resolves it).
    Accents are folded ("Rüppell" -> "ruppell").
    """
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"['’`]s\b", "", text)
    return re.sub(r"[^a-z0-9]", "", text)


def read_cub_classes(path: str | Path) -> pd.DataFrame:
    """Read CUB's classes.txt ('1 001.Black_footed_Albatross') into class_id, class_name."""
    rows = [(int(a), b) for _, a, b in _read_pairs(Path(path), r"(\d+)\s+(\S+)")]
    frame = pd.DataFrame(rows, columns=["class_id", "class_name"])
    _require_unique(frame, "class_id", path)
    _require_unique(frame, "class_name", path)
    return frame.sort_values("class_id", ignore_index=True)


def _read_pairs(path: Path, pattern: str) -> list[tuple[int, str, str]]:
    """Parse 'a b' lines by regex into (line number, a, b); malformed lines name file:line."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        match = re.fullmatch(pattern, line.strip())
        if match is None:
            raise TaxonomyError(f"{path}:{number}: malformed line {line!r}")
        out.append((number, match.group(1), match.group(2)))
    return out


def _require_unique(frame: pd.DataFrame, column: str, path: str | Path) -> None:
    """Raise if a column that must identify rows repeats a value."""
    dup = sorted(frame.loc[frame[column].duplicated(), column].astype(str))
    if dup:
        raise TaxonomyError(f"{path}: duplicated {column} {dup[:5]}")


# ------------------------------------------------------------------------------ alias file


@dataclass(frozen=True)
class AliasEntry:
    """One human decision: CUB class -> checklist common or scientific name, and why."""

    class_name: str
    target: str
    reason: str


@dataclass(frozen=True)
class AliasFile:
    """The validated alias file: aliases and manual-verification entries."""

    path: str
    version: str
    checklist: str
    aliases: tuple[AliasEntry, ...]
    manual: tuple[AliasEntry, ...]


def default_schema_path() -> Path:
    """Repository location of schemas/aliases.schema.json (src layout)."""
    return Path(__file__).resolve().parents[2] / "schemas" / "aliases.schema.json"


def load_alias_file(path: str | Path, schema_path: str | Path | None = None) -> AliasFile:
    """Load and schema-validate an alias file; errors name the file and the entry."""
    path = Path(path)
    schema_file = Path(schema_path) if schema_path else default_schema_path()
    if not schema_file.is_file():
        raise TaxonomyError(f"alias schema {schema_file} not found; pass schema_path=")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TaxonomyError(f"{path}: invalid JSON: {exc}") from exc
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(data),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    if errors:
        lines = [f"  - {_json_path(e.absolute_path, data)}: {e.message}" for e in errors]
        raise TaxonomyError(f"{path}: does not match {schema_file.name}:\n" + "\n".join(lines))
    sections = {
        k: tuple(AliasEntry(e["class"], e["target"], e["reason"]) for e in data[k])
        for k in ("aliases", "manual")
    }
    seen = [e.class_name for s in sections.values() for e in s]
    dup = sorted({c for c in seen if seen.count(c) > 1})
    if dup:
        raise TaxonomyError(
            f"{path}: class(es) listed more than once across aliases/manual: "
            f"{dup}; keep one entry per class"
        )
    return AliasFile(
        str(path), data["version"], data["checklist"], sections["aliases"], sections["manual"]
    )


def _json_path(parts: Iterable[str | int], data: dict) -> str:
    """Readable location of a schema error, with the entry's class when there is one."""
    parts = list(parts)
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts) or "<top>"
    if len(parts) >= 2 and isinstance(parts[1], int):
        entry = data[parts[0]][parts[1]]
        if isinstance(entry, dict) and "class" in entry:
            text += f" (class {entry['class']!r})"
    return text.lstrip(".")


# ---------------------------------------------------------------------------- CUB matching


def match_cub_classes(
    classes: pd.DataFrame,
    checklist: Checklist,
    aliases: AliasFile,
    *,
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD,
    fuzzy_margin: float = DEFAULT_FUZZY_MARGIN,
) -> pd.DataFrame:
    """Resolve every CUB class to one checklist species; one row per class, by class_id.

    Order: exact normalised name; fuzzy (``fuzz.ratio`` on normalised names, accepted
    only if score >= threshold and score - runner-up >= margin); alias; manual. Aliases
    only resolve classes the automatic steps left open; an alias that names a different
    species than an accepted automatic match is an error (tighten the fuzzy settings or
    fix the alias). A manual entry is a human verification: it resolves the class if
    nothing else did, must agree with any earlier match, and marks the row 'manual'.
    """
    table = checklist.table
    missing = {"class_id", "class_name"} - set(classes.columns)
    if missing or classes["class_name"].duplicated().any():
        raise TaxonomyError(
            f"class table needs unique class_name and class_id columns "
            f"(missing {sorted(missing)}); read it with read_cub_classes"
        )
    if aliases.checklist != checklist.source:
        raise TaxonomyError(
            f"{aliases.path} was written for checklist '{aliases.checklist}' "
            f"but the checklist is '{checklist.source}'; use a matching alias "
            "file or update its 'checklist' and targets"
        )
    targets = _resolve_targets(classes, table, aliases)
    keys = table["common_name"].map(normalise_name).tolist()
    index: dict[str, list[int]] = {}
    for row, key in enumerate(keys):
        index.setdefault(key, []).append(row)
    rows, unresolved = [], []
    ordered = classes.sort_values("class_id")[["class_id", "class_name"]]
    for class_id, class_name in ordered.itertuples(index=False):
        query = normalise_name(common_name_from_class(class_name))
        found = _automatic(query, index, keys, fuzzy_threshold, fuzzy_margin)
        found = _apply_entries(class_name, found, targets, table, aliases.path)
        if found is None:
            unresolved.append((class_name, _top_candidates(query, keys, 3)))
            continue
        rows.append(_match_row(int(class_id), class_name, table, found))
    if unresolved:
        raise TaxonomyError(_unresolved_message(unresolved, table, checklist, aliases.path))
    frame = pd.DataFrame(rows, columns=list(MATCH_COLUMNS))
    frame = frame.assign(leaf=frame["class_name"], middle=frame["genus"], high=frame["family"])
    return add_level_codes(frame.reset_index(drop=True))


def _resolve_targets(classes: pd.DataFrame, table: pd.DataFrame, aliases: AliasFile) -> dict:
    """Map class -> (checklist row, section); all bad entries are reported together."""
    known = set(classes["class_name"])
    by_name = {v: i for i, v in enumerate(table["common_name"])}
    by_sci = {v: i for i, v in enumerate(table["scientific_name"])}
    out, problems = {}, []
    for section in ("aliases", "manual"):
        for entry in getattr(aliases, section):
            row = by_name.get(entry.target, by_sci.get(entry.target))
            if entry.class_name not in known:
                problems.append(
                    f"class {entry.class_name!r} ({section}) is not in the class "
                    "list; fix or remove the entry"
                )
            elif row is None:
                near = ", ".join(
                    table["common_name"].iloc[i]
                    for i, _ in _top_candidates(
                        normalise_name(entry.target), table["common_name"].map(normalise_name), 3
                    )
                )
                problems.append(
                    f"class {entry.class_name!r} ({section}): target "
                    f"{entry.target!r} is not a common or scientific name in the "
                    f"checklist (closest: {near})"
                )
            else:
                out[entry.class_name] = (row, section)
    if problems:
        raise TaxonomyError(f"{aliases.path}: bad entries:\n  - " + "\n  - ".join(problems))
    return out


def _automatic(
    query: str, index: dict[str, list[int]], keys: list[str], threshold: float, margin: float
) -> Found | None:
    """Exact then guarded fuzzy match: (row, method, score, runner_up_row, runner_score)."""
    exact = index.get(query, [])
    if len(exact) == 1:
        return (exact[0], "exact", 100.0, None, math.nan)
    top = _top_candidates(query, keys, 2)
    if not top:
        return None
    best_row, best = top[0]
    runner_row, runner = top[1] if len(top) > 1 else (None, 0.0)
    if best >= threshold and best - runner >= margin:
        return (best_row, "fuzzy", best, runner_row, runner if runner_row is not None else math.nan)
    return None


def _apply_entries(
    class_name: str, found: Found | None, targets: dict, table: pd.DataFrame, path: str
) -> Found | None:
    """Apply the alias/manual entry for a class on top of the automatic result."""
    if class_name not in targets:
        return found
    row, section = targets[class_name]
    if found is not None and found[0] != row:
        raise TaxonomyError(
            f"{path}: {section} entry for {class_name!r} names "
            f"{table['common_name'].iloc[row]!r} but the {found[1]} match is "
            f"{table['common_name'].iloc[found[0]]!r} (score {found[2]:.1f}); fix the entry "
            "or raise the fuzzy threshold/margin"
        )
    if found is not None and section == "aliases":
        return found
    method = "alias" if section == "aliases" else "manual"
    return (row, method, 100.0, None, math.nan)


def _top_candidates(query: str, keys, limit: int) -> list[tuple[int, float]]:
    """Best checklist rows by whole-string ``fuzz.ratio``, ties broken by key then row."""
    keys = list(keys)
    scored = process.extract(query, keys, scorer=fuzz.ratio, limit=None)
    ranked = sorted(
        ((float(s), keys[i], i) for _, s, i in scored), key=lambda t: (-t[0], t[1], t[2])
    )
    return [(i, s) for s, _, i in ranked[:limit]]


def _match_row(class_id: int, class_name: str, table: pd.DataFrame, found: Found) -> dict:
    """Assemble one output row from the matched checklist species."""
    row, method, score, runner_row, runner_score = found
    species = table.iloc[row]
    return {
        "class_id": class_id,
        "class_name": class_name,
        "common_name": common_name_from_class(class_name),
        "matched_name": species["common_name"],
        "scientific_name": species["scientific_name"],
        "genus": species["scientific_name"].split()[0],
        "family": canonical_family(species["family"]),
        "order": species["order"],
        "method": method,
        "score": float(score),
        "runner_up": "" if runner_row is None else table["common_name"].iloc[runner_row],
        "runner_up_score": float(runner_score),
    }


def _unresolved_message(
    unresolved: list, table: pd.DataFrame, checklist: Checklist, path: str
) -> str:
    """One message listing every unresolved class with its top-3 candidates."""
    lines = [
        f"{len(unresolved)} CUB class(es) matched no species in {checklist.source} "
        f'({checklist.version}); add an entry per class to the "aliases" section of '
        f"{path}:"
    ]
    for class_name, top in unresolved:
        cands = "; ".join(
            f"{table['common_name'].iloc[i]} ({table['scientific_name'].iloc[i]}) {s:.1f}"
            for i, s in top
        )
        lines.append(f"  - {class_name}: candidates {cands}")
    return "\n".join(lines)


# ------------------------------------------------------------------------- checks, report


def check_taxonomy_consistency(df: pd.DataFrame) -> None:
    """Raise unless every class is resolved, in one middle group, and each middle in one high."""
    words = LEVEL_NAMES["cub"] if "genus" in df.columns else LEVEL_NAMES["nabirds"]
    problems = []
    bad = df["middle"].isna() | df["high"].isna() | (df["middle"] == "") | (df["high"] == "")
    if "method" in df.columns:
        bad |= ~df["method"].isin(METHODS)
    if bad.any():
        problems.append(f"unresolved {words[0]}(es): {sorted(df.loc[bad, 'leaf'].astype(str))}")
    ok = df[~bad]
    for child, parent, cw, pw in (("leaf", "middle", *words[:2]), ("middle", "high", *words[1:])):
        groups = ok.groupby(child)[parent].unique()
        for name, parents in groups[groups.map(len) > 1].items():
            members = sorted(ok.loc[ok[child] == name, "leaf"].astype(str))
            problems.append(
                f"{cw} {name!r} is in {len(parents)} {pw} groups "
                f"{sorted(map(str, parents))} (classes {members})"
            )
    if problems:
        raise TaxonomyError("taxonomy is inconsistent:\n  - " + "\n  - ".join(problems))


def add_level_codes(df: pd.DataFrame) -> pd.DataFrame:
    """Add leaf_code/middle_code/high_code: dense 0..n-1 ranks of the sorted level names."""
    out = df.copy()
    for level, column in zip(("leaf", "middle", "high"), CODE_COLUMNS, strict=True):
        names = sorted(out[level].astype(str).unique())
        out[column] = out[level].astype(str).map({n: i for i, n in enumerate(names)})
        out[column] = out[column].astype("int64")
    return out


def match_report_markdown(df: pd.DataFrame, *, checklist: Checklist, alias_path: str) -> str:
    """Deterministic Markdown summary of how the CUB classes were matched."""
    per_genus = df.groupby("genus")["class_id"].count()
    singles = sorted(per_genus[per_genus == 1].index)
    lines = [
        "# CUB taxonomy match report",
        "",
        f"- Checklist: {checklist.source} (version {checklist.version}, sha256 {checklist.sha256})",
        f"- Alias file: {alias_path}",
        f"- Classes: {len(df)}; genera: {df['genus'].nunique()}; "
        f"families: {df['family'].nunique()}; genera with a single class: {len(singles)}",
        "",
        "## Classes per method",
        "",
        "| method | classes |",
        "|---|---|",
    ]
    counts = df["method"].value_counts()
    lines += [f"| {m} | {int(counts.get(m, 0))} |" for m in METHODS]
    lines += [
        "",
        "## Genera with a single class",
        "",
        ", ".join(singles) or "(none)",
        "",
        "## Non-exact matches",
        "",
        "| class | matched name | scientific name | method | score | runner-up | runner-up score |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in df[df["method"] != "exact"].sort_values("class_id").itertuples(index=False):
        runner = "" if math.isnan(r.runner_up_score) else f"{r.runner_up_score:.1f}"
        lines.append(
            f"| {r.class_name} | {r.matched_name} | *{r.scientific_name}* | "
            f"{r.method} | {r.score:.1f} | {r.runner_up} | {runner} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------- NABirds


def nabirds_taxonomy(
    classes_path: str | Path, hierarchy_path: str | Path, root_id: int = 0
) -> pd.DataFrame:
    """Leaf / Parent / Supergroup table from NABirds' classes.txt and hierarchy.txt.

    Leaves are nodes without children, middle is a leaf's parent, high is its ancestor
    directly under the root. Output is sorted by class_id (the leaf's node id).
    """
    pairs = _read_pairs(Path(classes_path), r"(\d+)\s+(.+)")
    names = {int(i): n.strip() for _, i, n in pairs}
    if len(names) != len(pairs):
        raise TaxonomyError(f"{classes_path}: duplicated node ids")
    if root_id not in names:
        raise TaxonomyError(f"{classes_path}: root node {root_id} is missing")
    parent = _read_parents(Path(hierarchy_path), names, root_id)
    high = _high_ancestors(parent, names, root_id, hierarchy_path)
    has_children = set(parent.values())
    rows = []
    for node in sorted(n for n in names if n not in has_children and n != root_id):
        mid = parent[node]
        if mid == root_id or high[node] == mid:
            raise TaxonomyError(
                f"{hierarchy_path}: leaf {node} ({names[node]!r}) sits less "
                "than two levels below the root; it has no parent group"
            )
        rows.append(
            (node, names[node], names[node], names[mid], names[high[node]], mid, high[node])
        )
    frame = pd.DataFrame(
        rows, columns=["class_id", "class_name", "leaf", "middle", "high", "middle_id", "high_id"]
    )
    for level in ("middle", "high"):
        if frame.groupby(level)[f"{level}_id"].nunique().max() > 1:
            raise TaxonomyError(
                f"{classes_path}: two {level} nodes share a name; codes "
                "are built from names, so names must be unique per level"
            )
    return add_level_codes(frame)


def _read_parents(path: Path, names: dict[int, str], root_id: int) -> dict[int, int]:
    """Parse 'child parent' lines; unknown ids, double parents and a parented root fail."""
    parent: dict[int, int] = {}
    for number, a, b in _read_pairs(path, r"(\d+)\s+(\d+)"):
        child, par = int(a), int(b)
        for node in (child, par):
            if node not in names:
                raise TaxonomyError(f"{path}:{number}: node {node} is not in classes.txt")
        if child in parent or child == root_id:
            raise TaxonomyError(
                f"{path}:{number}: node {child} given a second parent (or the root given a parent)"
            )
        parent[child] = par
    return parent


def _high_ancestors(
    parent: dict[int, int], names: dict[int, str], root_id: int, path: str | Path
) -> dict[int, int]:
    """For each node, its ancestor directly under the root; orphans and cycles fail."""
    orphans = sorted(n for n in names if n != root_id and n not in parent)
    if orphans:
        raise TaxonomyError(
            f"{path}: node(s) with no parent, hence no path to root "
            f"{root_id}: {[(n, names[n]) for n in orphans[:10]]}"
        )
    high: dict[int, int] = {}
    for start in sorted(parent):
        chain, node = [], start
        while node not in high and node != root_id and parent[node] != root_id:
            if node in chain:
                cycle = chain[chain.index(node) :]
                raise TaxonomyError(f"{path}: cycle through nodes {[(n, names[n]) for n in cycle]}")
            chain.append(node)
            node = parent[node]
        top = high.get(node, node)
        for member in chain:
            high[member] = top
        high[node] = top
    return high


# ------------------------------------------------------------------------ shuffled control


def shuffle_taxonomy(
    tax: pd.DataFrame, seed: int = DEFAULT_SHUFFLE_SEED
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Structure-preserving shuffled taxonomy for the control arm.

    Leaf labels stay; every middle group keeps its size and every high group its number
    of middles; no leaf keeps its middle (new middle != old middle). Middles are then
    re-hung under highs by a seeded permutation (fixed points allowed, counted). Returns
    the generic columns only (dataset-specific ones like genus would be stale).
    """
    base = tax.sort_values("class_id", ignore_index=True)
    _require_unique(base, "leaf", "taxonomy table")
    check_taxonomy_consistency(base)
    rng = np.random.default_rng(seed)
    old_middle = base["middle"].astype(str).to_numpy()
    new_middle = _derange_groups(old_middle, rng)
    mid_high = base.drop_duplicates("middle").set_index("middle")["high"].sort_index()
    permuted = rng.permutation(mid_high.to_numpy())
    new_high = dict(zip(mid_high.index, permuted, strict=True))
    out = base[["class_id", "class_name", "leaf"]].copy()
    out["middle"] = new_middle
    out["high"] = out["middle"].map(new_high)
    for level in ("middle", "high"):
        if f"{level}_id" in base.columns:
            ids = dict(zip(base[level], base[f"{level}_id"], strict=True))
            out[f"{level}_id"] = out[level].map(ids).astype("int64")
    report = {
        "seed": int(seed),
        "n_leaves": len(out),
        "n_middles": len(mid_high),
        "n_highs": int(mid_high.nunique()),
        "leaf_fixed_points": int((new_middle == old_middle).sum()),
        "middle_high_fixed_points": int((permuted == mid_high.to_numpy()).sum()),
    }
    return add_level_codes(out), report


def _derange_groups(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Permute group labels over items so group sizes stay and no item keeps its group."""
    labels, sizes = np.unique(groups, return_counts=True)
    if sizes.max() * 2 > len(groups):
        big = labels[sizes.argmax()]
        raise TaxonomyError(
            f"cannot shuffle: middle group {big!r} holds {sizes.max()} of "
            f"{len(groups)} leaves, so some leaf must keep it (needs <= half)"
        )
    slots = rng.permutation(groups)
    for i in range(len(groups)):
        if slots[i] != groups[i]:
            continue
        ok = np.flatnonzero((slots != groups[i]) & (groups != groups[i]))
        j = ok[rng.integers(len(ok))]
        slots[i], slots[j] = slots[j], slots[i]
    return slots
