"""CUB class names -> checklist species: name normalisation, exact / guarded fuzzy / alias /
manual matching with its unresolved-class message, and the taxonomy consistency check."""

from __future__ import annotations

import math
import re
import unicodedata

import pandas as pd
from rapidfuzz import fuzz, process

from hierbench.protocol import LEVEL_NAMES

from .aliases import AliasFile
from .checklist import Checklist, canonical_family
from .errors import TaxonomyError
from .levels import add_level_codes

# Fuzzy acceptance on the default checklist: the correct fuzzy matches score >= 93.3 with
# margins >= 12.9, the best wrong candidate scores 87.0 (and several traps 80-85).
DEFAULT_FUZZY_THRESHOLD = 90.0
DEFAULT_FUZZY_MARGIN = 5.0

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

Found = tuple[int, str, float, int | None, float]  # row, method, score, runner-up row, score


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
