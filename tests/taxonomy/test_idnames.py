"""The one `<integer id> <name>` reader and how staging, the datasets and the taxonomy use it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hierbench.data.inputs import InputFormatError, parse_id_name_lines
from hierbench.data.layouts import DatasetFormatError, DatasetIdNameError, read_classes
from hierbench.idnames import IdNameFormatError, IdNameLine, iter_id_names, read_id_name_file
from hierbench.taxonomy import TaxonomyError, TaxonomyInputError, read_cub_classes


def _file(tmp_path: Path, text: str | bytes, name: str = "classes.txt") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_lines_are_numbered_and_names_keep_inner_spaces(tmp_path: Path):
    path = _file(tmp_path, "1 Birds\n\n  2\tDucks, Geese, and Swans  \n10   Teal\n")
    assert read_id_name_file(path) == [
        IdNameLine(1, 1, "Birds"),
        IdNameLine(3, 2, "Ducks, Geese, and Swans"),
        IdNameLine(4, 10, "Teal"),
    ]


def test_a_bom_and_crlf_endings_are_tolerated(tmp_path: Path):
    path = _file(tmp_path, "\ufeff1 001.A\r\n2 002.B\r\n".encode())
    assert [(r.id, r.name) for r in read_id_name_file(path)] == [(1, "001.A"), (2, "002.B")]


@pytest.mark.parametrize("line", ["x1 Birds", "1", "-1 Birds", "1.5 Birds", "² Birds"])
def test_a_malformed_line_names_file_and_line(tmp_path: Path, line: str):
    path = _file(tmp_path, f"0 Root\n{line}\n")
    with pytest.raises(
        IdNameFormatError, match=rf"^{re.escape(str(path))}:2: malformed line, expected"
    ):
        read_id_name_file(path)


def test_the_name_pattern_decides_what_the_rest_of_a_line_may_be(tmp_path: Path):
    tree = _file(tmp_path, "1 0\n2 1\n3 x\n", "hierarchy.txt")
    with pytest.raises(IdNameFormatError, match=r"hierarchy\.txt:3: "):
        read_id_name_file(tree, name_pattern=r"\d+")
    names = _file(tmp_path, "1 one\n2 two words\n")
    with pytest.raises(IdNameFormatError, match=r"classes\.txt:2: "):
        read_id_name_file(names, name_pattern=r"\S+")


def test_blank_lines_are_skipped_or_malformed(tmp_path: Path):
    path = _file(tmp_path, "1 a\n   \n2 b\n")
    assert [r.number for r in read_id_name_file(path)] == [1, 3]
    with pytest.raises(IdNameFormatError, match=r"classes\.txt:2: malformed line"):
        read_id_name_file(path, skip_blank=False)


def test_duplicate_ids_name_both_lines_unless_allowed(tmp_path: Path):
    path = _file(tmp_path, "1 a\n2 b\n1 c\n")
    with pytest.raises(
        IdNameFormatError, match=r"classes\.txt:3: duplicate id 1 \(first on line 1\)"
    ):
        read_id_name_file(path)
    assert [r.id for r in read_id_name_file(path, duplicate=None)] == [1, 2, 1]


def test_an_empty_file_is_an_error_unless_allowed(tmp_path: Path):
    path = _file(tmp_path, "\n\n")
    with pytest.raises(IdNameFormatError, match=r"classes\.txt: file lists no ids$"):
        read_id_name_file(path)
    assert read_id_name_file(path, empty=None) == []


def test_text_that_is_not_utf8_is_named(tmp_path: Path):
    path = _file(tmp_path, b"1 Caf\xe9\n")
    with pytest.raises(IdNameFormatError, match=r"classes\.txt: not UTF-8 text"):
        read_id_name_file(path)


def test_the_lazy_form_yields_good_lines_before_the_bad_one(tmp_path: Path):
    rows = iter_id_names(_file(tmp_path, "1 a\n2 b\nthree c\n"))
    assert next(rows).name == "a" and next(rows).name == "b"
    with pytest.raises(IdNameFormatError, match=r":3: "):
        next(rows)


# Each caller keeps its own checks and wording, and raises an error that is both the common
# IdNameFormatError and the caller's own type.


def test_staging_is_strict_about_blank_lines_and_repeats(tmp_path: Path):
    blank = _file(tmp_path, "1 a\n\n2 b\n")
    with pytest.raises(
        InputFormatError, match=r"classes\.txt:2: expected '<integer id> <text>', got ''"
    ):
        parse_id_name_lines(blank)
    repeated = _file(tmp_path, "1 a\n1 b\n")
    with pytest.raises(IdNameFormatError, match=r"classes\.txt:2: id 1 already given on line 1"):
        parse_id_name_lines(repeated)
    with pytest.raises(InputFormatError, match=r"classes\.txt: file is empty"):
        parse_id_name_lines(_file(tmp_path, ""))
    assert parse_id_name_lines(_file(tmp_path, "5 a b\n")) == [(5, "a b")]


def test_the_dataset_reader_keeps_its_messages(tmp_path: Path):
    with pytest.raises(
        DatasetFormatError,
        match=r"classes\.txt:2: malformed line, expected "
        r"'<class_id> <name>': 'two Teal'",
    ):
        read_classes(_file(tmp_path, "1 Mallard\ntwo Teal\n"))
    with pytest.raises(DatasetIdNameError, match=r"classes\.txt: file lists no classes"):
        read_classes(_file(tmp_path, "\n"))
    assert issubclass(DatasetIdNameError, IdNameFormatError)
    assert read_classes(_file(tmp_path, "3 Green-winged Teal\n1 Mallard\n")) == {
        3: "Green-winged Teal",
        1: "Mallard",
    }


def test_the_taxonomy_keeps_its_messages(tmp_path: Path):
    with pytest.raises(TaxonomyInputError, match=r"classes\.txt:2: malformed line '2 two words'"):
        read_cub_classes(_file(tmp_path, "1 001.A\n2 two words\n"))
    with pytest.raises(TaxonomyError, match=r"classes\.txt: duplicated class_id \['1'\]"):
        read_cub_classes(_file(tmp_path, "1 001.A\n1 002.B\n"))
    assert issubclass(TaxonomyInputError, IdNameFormatError)
