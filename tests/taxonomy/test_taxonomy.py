"""Tests for hierbench.taxonomy: CUB matching, NABirds hierarchy and the shuffled control."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierbench import taxonomy as tx
from hierbench.taxonomy import AliasEntry, AliasFile, Checklist, TaxonomyError

REPO = Path(__file__).resolve().parents[2]
ALIAS_PATH = REPO / "resources" / "cub_aliases.json"
SCHEMA_PATH = REPO / "schemas" / "aliases.schema.json"
TRAPS = {
    "Cardinal": "Northern Cardinal",
    "Mockingbird": "Northern Mockingbird",
    "Tree_Sparrow": "American Tree Sparrow",
    "Nighthawk": "Common Nighthawk",
    "Frigatebird": "Magnificent Frigatebird",
    "White_Pelican": "American White Pelican",
    "Herring_Gull": "American Herring Gull",
    "House_Wren": "Northern House Wren",
    "Whip_poor_Will": "Eastern Whip-poor-will",
}


def data_file(name: str) -> Path:
    """A class list or tree shipped in the repository's resources/."""
    return REPO / "resources" / name


def make_checklist(rows: list[tuple[str, str, str]], source: str = "test") -> Checklist:
    """Tiny checklist from (common name, scientific name, family) rows."""
    table = pd.DataFrame(
        [(c, s, f, "Order") for c, s, f in rows], columns=list(tx.CHECKLIST_COLUMNS)
    )
    return Checklist(table, source, "0", "0" * 64)


def make_aliases(aliases=(), manual=(), checklist: str = "test") -> AliasFile:
    """AliasFile from (class, target) pairs."""

    def entries(pairs):
        return tuple(AliasEntry(c, t, "test") for c, t in pairs)

    return AliasFile("my_aliases.json", "1", checklist, entries(aliases), entries(manual))


def make_classes(names: list[str]) -> pd.DataFrame:
    """CUB-style class table with ids 1..n."""
    return pd.DataFrame({"class_id": range(1, len(names) + 1), "class_name": names})


SMALL = make_checklist(
    [
        ("Brewer's Blackbird", "Euphagus cyanocephalus", "Icteridae (Troupials and Allies)"),
        ("Arctic Tern", "Sterna paradisaea", "Laridae"),
        ("Northern Cardinal", "Cardinalis cardinalis", "Cardinalidae"),
        ("Cardinal Lory", "Chalcopsitta cardinalis", "Psittaculidae"),
        ("Yellow Warbler", "Setophaga petechia", "Parulidae (New World Warblers)"),
        ("Inca Tern", "Larosterna inca", "Laridae"),
    ]
)


@pytest.fixture(scope="module")
def default_checklist() -> Checklist:
    return tx.load_default_checklist()


@pytest.fixture(scope="module")
def cub_table(default_checklist) -> pd.DataFrame:
    classes = tx.read_cub_classes(data_file("cub_classes.txt"))
    return tx.match_cub_classes(classes, default_checklist, tx.load_alias_file(ALIAS_PATH))


@pytest.fixture(scope="module")
def nabirds() -> pd.DataFrame:
    return tx.nabirds_taxonomy(data_file("nabirds_classes.txt"), data_file("nabirds_hierarchy.txt"))


# ------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "raw, key",
    [
        ("Brewer's Blackbird", "brewerblackbird"),
        ("Brewer Blackbird", "brewerblackbird"),
        ("Brewer’s Blackbird", "brewerblackbird"),
        ("Chuck-will's-widow", "chuckwillwidow"),
        ("Chuck will Widow", "chuckwillwidow"),
        ("Harris's Sparrow", "harrissparrow"),
        ("Gray-crowned Rosy-Finch", "graycrownedrosyfinch"),
        ("black_and WHITE  warbler", "blackandwhitewarbler"),
        ("Rüppell's Vulture", "ruppellvulture"),
        ("Forsters Tern", "forsterstern"),
    ],
)
def test_normalise_name(raw, key):
    assert tx.normalise_name(raw) == key


def test_common_name_from_class():
    assert tx.common_name_from_class("001.Black_footed_Albatross") == "Black footed Albatross"
    assert tx.common_name_from_class("022.Chuck_will_Widow") == "Chuck will Widow"


@pytest.mark.parametrize(
    "raw, family",
    [
        ("Parulidae (New World Warblers)", "Parulidae"),
        ("  Parulidae ", "Parulidae"),
        ("Laridae (Gulls, Terns, and Skimmers)", "Laridae"),
        ("Laridae", "Laridae"),
    ],
)
def test_canonical_family(raw, family):
    assert tx.canonical_family(raw) == family


def test_read_cub_classes_malformed(tmp_path):
    path = tmp_path / "classes.txt"
    path.write_text("1 001.A_Bird\n2\n")
    with pytest.raises(TaxonomyError, match=r"classes\.txt:2: malformed"):
        tx.read_cub_classes(path)


# --------------------------------------------------------------------------- matching


def test_precedence_exact_fuzzy_alias_manual():
    classes = make_classes(
        ["001.Brewer_Blackbird", "002.Artic_Tern", "003.Cardinal", "004.Yellow_Warbler"]
    )
    aliases = make_aliases(
        aliases=[
            ("003.Cardinal", "Northern Cardinal"),
            ("001.Brewer_Blackbird", "Euphagus cyanocephalus"),
            ("002.Artic_Tern", "Arctic Tern"),
        ],
        manual=[("004.Yellow_Warbler", "Yellow Warbler")],
    )
    df = tx.match_cub_classes(classes, SMALL, aliases)
    assert df["method"].tolist() == ["exact", "fuzzy", "alias", "manual"]
    assert df["matched_name"].tolist() == [
        "Brewer's Blackbird",
        "Arctic Tern",
        "Northern Cardinal",
        "Yellow Warbler",
    ]
    assert df["genus"].tolist() == ["Euphagus", "Sterna", "Cardinalis", "Setophaga"]
    assert df["family"].tolist() == ["Icteridae", "Laridae", "Cardinalidae", "Parulidae"]
    assert df.loc[0, "score"] == 100.0 and math.isnan(df.loc[0, "runner_up_score"])
    assert 90 < df.loc[1, "score"] < 100 and df.loc[1, "runner_up"] == "Inca Tern"
    assert (df["middle"] == df["genus"]).all() and (df["high"] == df["family"]).all()
    assert df["middle_code"].tolist() == [1, 3, 0, 2]


def test_alias_contradicting_automatic_match_is_error():
    aliases = make_aliases(aliases=[("001.Artic_Tern", "Inca Tern")])
    with pytest.raises(
        TaxonomyError,
        match=r"'001.Artic_Tern' names 'Inca Tern' but the "
        r"fuzzy match is 'Arctic Tern'",
    ):
        tx.match_cub_classes(make_classes(["001.Artic_Tern"]), SMALL, aliases)


def test_fuzzy_margin_rule():
    checklist = make_checklist(
        [
            ("Arctic Tern", "Sterna paradisaea", "Laridae"),
            ("Artic Terns", "Sterna fictus", "Laridae"),
        ]
    )
    classes = make_classes(["001.Artic_Tern"])
    with pytest.raises(TaxonomyError, match="Arctic Tern"):
        tx.match_cub_classes(classes, checklist, make_aliases())
    df = tx.match_cub_classes(classes, checklist, make_aliases(), fuzzy_margin=0.0)
    assert df.loc[0, "method"] == "fuzzy" and df.loc[0, "runner_up"] == "Artic Terns"
    assert df.loc[0, "score"] - df.loc[0, "runner_up_score"] < tx.DEFAULT_FUZZY_MARGIN


def test_fuzzy_threshold_rule():
    classes = make_classes(["001.Cardinal"])
    with pytest.raises(TaxonomyError, match=r"001\.Cardinal"):
        tx.match_cub_classes(classes, SMALL, make_aliases())
    df = tx.match_cub_classes(classes, SMALL, make_aliases(), fuzzy_threshold=50, fuzzy_margin=0)
    assert df.loc[0, "matched_name"] == "Cardinal Lory"  # why the threshold matters


def test_unresolved_reported_together_with_candidates():
    classes = make_classes(["001.Cardinal", "002.Brewer_Blackbird", "003.Tern"])
    with pytest.raises(TaxonomyError) as err:
        tx.match_cub_classes(classes, SMALL, make_aliases())
    text = str(err.value)
    assert text.startswith("2 CUB class(es)") and "my_aliases.json" in text
    lines = [line for line in text.splitlines() if line.startswith("  - ")]
    assert [line.split(":")[0] for line in lines] == ["  - 001.Cardinal", "  - 003.Tern"]
    assert all(line.count(";") == 2 for line in lines)  # three candidates each
    assert "Cardinal Lory (Chalcopsitta cardinalis) 80.0" in lines[0]


def test_trap_names_never_fuzzy_to_wrong_species(default_checklist):
    classes = make_classes([f"{i:03d}.{n}" for i, n in enumerate(TRAPS, start=1)])
    empty = make_aliases(checklist=default_checklist.source)
    with pytest.raises(TaxonomyError) as err:
        tx.match_cub_classes(classes, default_checklist, empty)
    for name in classes["class_name"]:
        assert f"  - {name}: candidates" in str(err.value)
    assert str(err.value).startswith(f"{len(TRAPS)} CUB class(es)")


def test_trap_names_resolve_to_intended_species(cub_table):
    for name, species in TRAPS.items():
        row = cub_table[cub_table["class_name"].str.endswith("." + name)].iloc[0]
        assert (row["matched_name"], row["method"]) == (species, "alias")


def test_alias_target_absent_is_error():
    aliases = make_aliases(aliases=[("001.Cardinal", "Red Cardinal")])
    with pytest.raises(
        TaxonomyError,
        match=r"(?s)my_aliases\.json.*'001\.Cardinal'.*"
        r"'Red Cardinal' is not",
    ):
        tx.match_cub_classes(make_classes(["001.Cardinal"]), SMALL, aliases)


def test_alias_for_unknown_class_is_error():
    aliases = make_aliases(aliases=[("009.Dodo", "Northern Cardinal")])
    with pytest.raises(TaxonomyError, match=r"'009\.Dodo' \(aliases\) is not in the class"):
        tx.match_cub_classes(make_classes(["001.Arctic_Tern"]), SMALL, aliases)


def test_alias_file_for_other_checklist_is_error():
    with pytest.raises(TaxonomyError, match="written for checklist 'other'"):
        tx.match_cub_classes(
            make_classes(["001.Arctic_Tern"]), SMALL, make_aliases(checklist="other")
        )


# ------------------------------------------------------------------------- alias file


def write_alias(tmp_path: Path, data) -> Path:
    path = tmp_path / "aliases.json"
    path.write_text(json.dumps(data))
    return path


def valid_alias_data() -> dict:
    return {
        "version": "1",
        "checklist": "test",
        "aliases": [
            {"class": "001.Cardinal", "target": "Northern Cardinal", "reason": "bare name"}
        ],
        "manual": [],
    }


def test_load_alias_file_roundtrip(tmp_path):
    loaded = tx.load_alias_file(write_alias(tmp_path, valid_alias_data()), SCHEMA_PATH)
    assert loaded.aliases == (AliasEntry("001.Cardinal", "Northern Cardinal", "bare name"),)
    assert loaded.manual == () and loaded.checklist == "test"


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda d: d["aliases"][0].pop("reason"), r"aliases\[0\] \(class '001.Cardinal'\)"),
        (lambda d: d["aliases"][0].update(note="x"), r"aliases\[0\] \(class '001.Cardinal'\)"),
        (lambda d: d["aliases"][0].update({"class": "Cardinal"}), r"aliases\[0\]\.class"),
        (lambda d: d.update(extra=1), "<top>"),
        (lambda d: d.pop("version"), "<top>"),
    ],
)
def test_alias_schema_violations_name_file_and_entry(tmp_path, edit, where):
    data = valid_alias_data()
    edit(data)
    path = write_alias(tmp_path, data)
    with pytest.raises(TaxonomyError, match=rf"aliases\.json: does not match(.|\n)*{where}"):
        tx.load_alias_file(path, SCHEMA_PATH)


def test_alias_duplicate_class_is_error(tmp_path):
    data = valid_alias_data()
    data["manual"] = [dict(data["aliases"][0])]
    with pytest.raises(TaxonomyError, match=r"more than once.*001\.Cardinal"):
        tx.load_alias_file(write_alias(tmp_path, data), SCHEMA_PATH)


def test_repository_alias_file_is_valid():
    loaded = tx.load_alias_file(ALIAS_PATH)
    assert loaded.checklist == "birdnames:ebird_2024" and len(loaded.aliases) >= 8


# ------------------------------------------------------------------------- checklists


def test_load_checklist_csv_maps_columns_and_filters(tmp_path):
    path = tmp_path / "ebird.csv"
    path.write_text(
        "CATEGORY,PRIMARY_COM_NAME,SCI_NAME,FAMILY\n"
        "species,Yellow Warbler,Setophaga petechia,Parulidae (New World Warblers)\n"
        "issf,Yellow Warbler (Northern),Setophaga petechia aestiva,Parulidae\n"
    )
    cols = {"common_name": "PRIMARY_COM_NAME", "scientific_name": "SCI_NAME", "family": "FAMILY"}
    checklist = tx.load_checklist_csv(path, cols, category_column="CATEGORY")
    assert checklist.table.to_dict("records") == [
        {
            "common_name": "Yellow Warbler",
            "scientific_name": "Setophaga petechia",
            "family": "Parulidae",
            "order": "",
        }
    ]
    assert len(checklist.sha256) == 64 and checklist.source == "csv:ebird.csv"
    with pytest.raises(TaxonomyError, match=r"ebird\.csv: column 'ORDER' not found"):
        tx.load_checklist_csv(path, {**cols, "order": "ORDER"})


def test_default_checklist(default_checklist):
    table = default_checklist.table
    assert list(table.columns) == list(tx.CHECKLIST_COLUMNS) and len(table) > 10000
    assert default_checklist.version.endswith("/2024") and len(default_checklist.sha256) == 64
    assert not table["family"].str.contains(r"\(").any()


# ----------------------------------------------------------------------- consistency


def test_consistency_detects_class_in_two_genera(cub_table):
    bad = pd.concat([cub_table, cub_table.iloc[[0]].assign(genus="Larus", middle="Larus")])
    with pytest.raises(
        TaxonomyError,
        match=r"class '001.Black_footed_Albatross' is in 2 "
        r"genus groups",
    ):
        tx.check_taxonomy_consistency(bad)


def test_consistency_detects_genus_in_two_families(cub_table):
    bad = cub_table.copy()
    bad.loc[bad["class_name"] == "063.Ivory_Gull", ["genus", "middle"]] = "Larus"
    with pytest.raises(
        TaxonomyError,
        match=r"genus 'Larus' is in 2 family groups(.|\n)*"
        r"063.Ivory_Gull",
    ):
        tx.check_taxonomy_consistency(
            bad.assign(
                high=bad["family"].where(bad["class_name"] != "063.Ivory_Gull", "Pagophilidae")
            )
        )


def test_consistency_detects_unresolved(cub_table):
    bad = cub_table.copy()
    bad.loc[0, "method"] = "unresolved"
    with pytest.raises(TaxonomyError, match=r"unresolved class.*001\.Black_footed_Albatross"):
        tx.check_taxonomy_consistency(bad)


def test_full_cub_against_default_checklist(cub_table, default_checklist):
    tx.check_taxonomy_consistency(cub_table)
    counts = cub_table["method"].value_counts().to_dict()
    genera, families = cub_table["genus"].nunique(), cub_table["family"].nunique()
    print(f"\nCUB methods {counts}; genera {genera}; families {families}")
    print(
        cub_table.loc[
            cub_table["method"] == "fuzzy",
            ["class_name", "matched_name", "score", "runner_up", "runner_up_score"],
        ]
    )
    assert len(cub_table) == 200 and cub_table["class_id"].tolist() == list(range(1, 201))
    assert sum(counts.values()) == 200 and set(counts) <= set(tx.METHODS)
    assert counts == {"exact": 179, "alias": 17, "fuzzy": 3, "manual": 1}
    assert (genera, families) == (123, 37)
    assert sorted(cub_table.loc[cub_table["method"] == "fuzzy", "matched_name"]) == [
        "Arctic Tern",
        "Forster's Tern",
        "Great Gray Shrike",
    ]
    assert cub_table.set_index("class_name").loc["103.Sayornis", "genus"] == "Sayornis"
    assert cub_table.set_index("class_name").loc["110.Geococcyx", "family"] == "Cuculidae"
    assert cub_table["high_code"].max() == families - 1


def test_match_report_markdown(cub_table, default_checklist):
    text = tx.match_report_markdown(
        cub_table, checklist=default_checklist, alias_path="resources/cub_aliases.json"
    )
    assert text == tx.match_report_markdown(
        cub_table, checklist=default_checklist, alias_path="resources/cub_aliases.json"
    )
    assert "| exact | 179 |" in text and "| manual | 1 |" in text
    assert "genera: 123; families: 37; genera with a single class: 85" in text
    assert "| 141.Artic_Tern | Arctic Tern | *Sterna paradisaea* | fuzzy | 94.7 |" in text
    assert "001.Black_footed_Albatross" not in text and text.count("| alias | 100.0 |") == 17


# ---------------------------------------------------------------------------- NABirds


def test_nabirds_counts(nabirds):
    assert len(nabirds) == 555
    assert nabirds["middle"].nunique() == 404 and nabirds["middle_id"].nunique() == 404
    assert nabirds["high"].nunique() == 22 and nabirds["high_id"].nunique() == 22
    assert (
        nabirds["class_id"].is_monotonic_increasing
        and (nabirds["leaf"] == nabirds["class_name"]).all()
    )
    assert sorted(nabirds["middle_code"].unique()) == list(range(404))
    tx.check_taxonomy_consistency(nabirds)


def write_tree(tmp_path: Path, hierarchy: str, classes: str | None = None) -> tuple[Path, Path]:
    c, h = tmp_path / "classes.txt", tmp_path / "hierarchy.txt"
    c.write_text(classes or "0 Birds\n1 Ducks\n2 Dabblers\n3 Mallard\n4 Teal\n5 Gulls\n")
    h.write_text(hierarchy)
    return c, h


def test_tiny_tree(tmp_path):
    df = tx.nabirds_taxonomy(
        *write_tree(
            tmp_path,
            "1 0\n2 1\n3 2\n4 2\n5 0\n6 5\n7 6\n",
            "0 Birds\n1 Ducks\n2 Dabblers\n3 Mallard\n4 Teal\n5 Gulls\n6 Larus\n7 Herring Gull\n",
        )
    )
    assert df[["leaf", "middle", "high"]].values.tolist() == [
        ["Mallard", "Dabblers", "Ducks"],
        ["Teal", "Dabblers", "Ducks"],
        ["Herring Gull", "Larus", "Gulls"],
    ]


@pytest.mark.parametrize(
    "hierarchy, message",
    [
        ("1 0\n2 1\n3 2\n4 2\n", r"no parent, hence no path to root 0: \[\(5, 'Gulls'\)\]"),
        (
            "1 0\n2 4\n3 2\n4 3\n5 0\n",
            r"cycle through nodes \[\(2, 'Dabblers'\), "
            r"\(4, 'Teal'\), \(3, 'Mallard'\)\]",
        ),
        ("1 0\n2 1\n3 2\n4 2\n5 0\n9 5\n", r"hierarchy\.txt:6: node 9 is not in classes"),
        ("1 0\n2 1\n3 2\n4 2 x\n5 0\n", r"hierarchy\.txt:4: malformed line"),
        ("1 0\n2 1\n3 2\n4 2\n5 0\n3 1\n", r"hierarchy\.txt:6: node 3 given a second parent"),
    ],
)
def test_broken_hierarchy(tmp_path, hierarchy, message):
    with pytest.raises(TaxonomyError, match=message):
        tx.nabirds_taxonomy(*write_tree(tmp_path, hierarchy))


def test_duplicate_middle_names_are_error(tmp_path):
    classes = "0 Birds\n1 Ducks\n2 Dabblers\n3 Mallard\n4 Gulls\n5 Dabblers\n6 Teal\n"
    with pytest.raises(TaxonomyError, match="two middle nodes share a name"):
        tx.nabirds_taxonomy(*write_tree(tmp_path, "1 0\n2 1\n3 2\n4 0\n5 4\n6 5\n", classes))


def test_leaf_directly_under_supergroup_is_error(tmp_path):
    with pytest.raises(TaxonomyError, match=r"leaf 5 \('Gulls'\) sits less than two levels"):
        tx.nabirds_taxonomy(*write_tree(tmp_path, "1 0\n2 1\n3 2\n4 2\n5 0\n"))


# ---------------------------------------------------------------------------- shuffle


def assert_shuffle_invariants(orig: pd.DataFrame, shuf: pd.DataFrame) -> None:
    orig = orig.sort_values("class_id", ignore_index=True)
    assert shuf["leaf"].tolist() == orig["leaf"].tolist()
    assert (
        shuf["middle"].value_counts().sort_index() == orig["middle"].value_counts().sort_index()
    ).all()
    old = orig.drop_duplicates("middle")["high"].value_counts().sort_index()
    new = shuf.drop_duplicates("middle")["high"].value_counts().sort_index()
    assert old.to_dict() == new.to_dict()
    assert (shuf["middle"] != orig["middle"]).all()
    tx.check_taxonomy_consistency(shuf)


def test_shuffle_nabirds_invariants(nabirds):
    shuf, report = tx.shuffle_taxonomy(nabirds)
    print(f"\nNABirds shuffle report {report}")
    assert_shuffle_invariants(nabirds, shuf)
    assert (shuf["middle_id"] != nabirds["middle_id"]).all()
    assert report["seed"] == 20260818 and report["leaf_fixed_points"] == 0
    mid_high = nabirds.drop_duplicates("middle").set_index("middle")["high"]
    new_high = shuf.drop_duplicates("middle").set_index("middle")["high"]
    assert report["middle_high_fixed_points"] == int((mid_high == new_high[mid_high.index]).sum())
    # Parents per Supergroup are kept, so the largest Supergroup (205 of 404 Parents) forces
    # 2·205 − 404 = 6 Parents to keep it; the shuffle meets that bound exactly.
    assert report["middle_high_fixed_point_bound"] == 6
    assert report["middle_high_fixed_points"] == 6
    again, again_report = tx.shuffle_taxonomy(nabirds.sample(frac=1, random_state=1))
    pd.testing.assert_frame_equal(shuf, again)
    assert again_report == report
    other, _ = tx.shuffle_taxonomy(nabirds, seed=1)
    assert not other["middle"].equals(shuf["middle"])


def test_the_paper_setting_keeps_exactly_fifteen_parents_under_their_supergroup(nabirds):
    # the paper's NABirds shuffle "necessarily retains 15 Parent-to-Supergroup fixed points"
    paper, report = tx.shuffle_taxonomy(nabirds, fixed_points="paper")
    assert_shuffle_invariants(nabirds, paper)
    assert report["middle_high_fixed_points"] == 15 == tx.PAPER_FIXED_POINTS
    assert report["middle_high_fixed_point_setting"] == "paper"
    mid_high = nabirds.drop_duplicates("middle").set_index("middle")["high"]
    new_high = paper.drop_duplicates("middle").set_index("middle")["high"]
    assert int((mid_high == new_high[mid_high.index]).sum()) == 15
    # the leaves' shuffle is the minimum setting's: only the re-hanging differs
    minimum, low = tx.shuffle_taxonomy(nabirds, fixed_points="minimum")
    assert low["middle_high_fixed_points"] == low["middle_high_fixed_point_bound"] == 6
    assert paper["middle"].equals(minimum["middle"])
    again, _ = tx.shuffle_taxonomy(nabirds, fixed_points="paper")
    pd.testing.assert_frame_equal(paper, again)


@pytest.mark.parametrize("setting", [5, 405, "most"])
def test_a_fixed_point_setting_out_of_reach_is_named(nabirds, setting):
    with pytest.raises(TaxonomyError, match=f"shuffle fixed points {setting!r}"):
        tx.shuffle_taxonomy(nabirds, fixed_points=setting)


@pytest.mark.parametrize("seed", range(10))
def test_rehanging_keeps_exactly_the_asked_number(seed: int):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(5), rng.integers(2, 9, size=5)).astype(str)
    labels = labels[rng.permutation(len(labels))]
    bound = tx.fixed_point_bound(labels)
    for kept in [*range(bound, len(labels) - 1), len(labels)]:  # all but one is unreachable
        new = tx.rehang_keeping(labels, kept, np.random.default_rng(seed))
        assert sorted(new) == sorted(labels) and int((new == labels).sum()) == kept
    with pytest.raises(TaxonomyError, match="cannot keep exactly"):
        tx.rehang_keeping(labels, len(labels) - 1, np.random.default_rng(seed))


def test_shuffle_cub_invariants(cub_table):
    shuf, report = tx.shuffle_taxonomy(cub_table, seed=7)
    assert_shuffle_invariants(cub_table, shuf)
    assert "genus" not in shuf.columns and report["n_middles"] == 123


@pytest.mark.parametrize("seed", range(20))
def test_rehanging_keeps_counts_and_meets_the_fixed_point_bound(seed: int):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=rng.integers(2, 8))
    if seed % 3 == 0:
        sizes[0] = sizes.sum() + seed  # a group larger than all others together
    labels = np.repeat(np.arange(len(sizes)), sizes).astype(str)
    labels = labels[rng.permutation(len(labels))]
    new = tx.rehang_with_fewest_fixed_points(labels, np.random.default_rng(seed))
    assert sorted(new) == sorted(labels)
    bound = max(0, 2 * int(sizes.max()) - len(labels))
    assert tx.fixed_point_bound(labels) == bound
    assert int((new == labels).sum()) == bound
    again = tx.rehang_with_fewest_fixed_points(labels, np.random.default_rng(seed))
    assert (again == new).all()


def test_shuffle_impossible_raises():
    tax = pd.DataFrame(
        {
            "class_id": [1, 2, 3],
            "class_name": ["a", "b", "c"],
            "leaf": ["a", "b", "c"],
            "middle": ["m", "m", "n"],
            "high": ["h", "h", "h"],
        }
    )
    with pytest.raises(TaxonomyError, match="middle group 'm' holds 2 of 3 leaves"):
        tx.shuffle_taxonomy(tax)
