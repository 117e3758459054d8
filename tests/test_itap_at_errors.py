"""A broken table or source stops the build with file, row and problem, and leaves no output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from equita.builders import itap_at
from equita.builders.common import BuildError, table_path


def _edit_line(path: Path, contains: str, replace=None) -> int:
    """Replace (or delete, with None) the first line containing `contains`; return its number."""
    lines = path.read_text(encoding="utf-8").split("\n")
    number = next(i for i, line in enumerate(lines) if contains in line)
    if replace is None:
        del lines[number]
    else:
        lines[number] = replace(lines[number])
    path.write_text("\n".join(lines), encoding="utf-8")
    return number + 1


CASES = [
    # (case id, file, line containing, edit, expected message parts; "{line}" = edited line number)
    # Without P-AT the tables can only tell that a line is missing; the source check names the
    # word (see "unknown input" below).
    ("missing translation", "inputs.tsv", "Flowers\tdaisy\t", None,
     ["inputs.tsv: subdataset 'base-1' has 49 inputs x 5 instructions = 245 rows, expected 250"]),
    ("empty translation", "inputs.tsv", "Flowers\tdaisy\t", lambda l: l.replace("\tmargherita\t", "\t\t"),
     ["inputs.tsv:{line}", "missing Italian input for P-AT input 'daisy'"]),
    ("duplicated input", "inputs.tsv", "Flowers\tdaisy\t", lambda l: l.replace("daisy", "rose").replace("margherita", "rosa canina"),
     ["inputs.tsv:{line}", "duplicated P-AT input 'rose' in Flowers"]),
    ("same Italian word twice", "inputs.tsv", "Flowers\tdaisy\t", lambda l: l.replace("margherita", "rosa"),
     ["inputs.tsv:{line}", "Italian input 'rosa' is used twice in Flowers"]),
    ("attribute not in instruction", "instructions.tsv", "Dire se una parola", lambda l: l.replace("è piacevole o spiacevole", "è bella o brutta"),
     ["instructions.tsv:{line}", "attribute 'piacevole' is not in the instruction"]),
    ("wrong count", "subdatasets.yaml", "rows: 60", lambda l: l.replace("60", "65"),
     ["subdataset 'base-9' has 12 inputs x 5 instructions = 60 rows, expected 65"]),
    ("missing instruction", "instructions.tsv", "pleasantness\t5\t", None,
     ["family 'pleasantness' has instruction ids [1, 2, 3, 4], expected 1..5"]),
    ("unknown placeholder", "instructions.tsv", "{art_input}", lambda l: l.replace("{art_input}", "{del_input}"),
     ["instructions.tsv:{line}", "unknown placeholder(s) ['del_input']"]),
    ("paper text changed without a departure", "instructions.tsv", "pleasantness\t3\t", lambda l: l.replace("\tDire se una parola", "\tDimmi se una parola", 1),
     ["instructions.tsv:{line}", "differs from the paper's ('Dire se una parola è piacevole o spiacevole') but no departure says why"]),
    ("name not in ISTAT list", "inputs.tsv", "FemaleNames\tDiana\t", lambda l: l.replace("Beatrice", "Brunilde"),
     ["inputs.tsv:{line}", "'Brunilde' is marked as an ISTAT 2022 name"]),
    ("article missing for a template", "inputs.tsv", "Math\talgebra\t", lambda l: l.replace("\tl'\t", "\t\t"),
     ["inputs.tsv:{line}", "'algebra' needs an article", "instructions.tsv"]),
]  # fmt: skip


@pytest.mark.parametrize("case, name, contains, edit, expected", CASES, ids=[c[0] for c in CASES])
def test_broken_table_stops_the_build(tmp_path, pat_path, case, name, contains, edit, expected):
    tables = tmp_path / "tables"
    shutil.copytree(table_path("itap_at", ""), tables)
    line = _edit_line(tables / name, contains, edit)
    out = tmp_path / "out"
    with pytest.raises(BuildError) as error:
        itap_at.build(out, pat_path=pat_path, tables_dir=tables)
    message = str(error.value)
    for part in expected:
        assert part.format(line=line) in message, message
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["tables"]  # no staging folder left behind


def _mutated_pat(pat: dict, tmp_path: Path, mutate) -> Path:
    data = json.loads(json.dumps(pat, allow_nan=True))
    mutate(data)
    path = tmp_path / "P-AT.json"
    path.write_text(json.dumps(data))
    return path


PAT_CASES = [
    ("duplicated index", lambda d: d["P-AT-base"]["weat1"][1].update(index=d["P-AT-base"]["weat1"][0]["index"]),
     "duplicated row id(s) ['base-1-"),
    ("truncated group", lambda d: d["P-AT-base"]["weat9"].pop(), "P-AT-base/weat9 has 59 rows, subdataset base-9 expects 60"),
    ("unknown input", lambda d: d["P-AT-base"]["weat1"][0].update(input="dandelion"),
     "P-AT input 'dandelion' ("),
    ("missing field", lambda d: d["P-AT-base"]["weat2"][3].pop("category"), "P-AT-base/weat2 row 3"),
    ("missing group", lambda d: d.pop("P-AT-age"), "no rows for P-AT-age/weat10 (subdataset age-10)"),
]  # fmt: skip


@pytest.mark.parametrize("case, mutate, expected", PAT_CASES, ids=[c[0] for c in PAT_CASES])
def test_broken_source_stops_the_build(tmp_path, pat, case, mutate, expected):
    path = _mutated_pat(pat, tmp_path, mutate)
    with pytest.raises(BuildError, match=None) as error:
        itap_at.build(tmp_path / "out", pat_path=path)
    assert expected in str(error.value)
    assert str(path) in str(error.value)
    assert not (tmp_path / "out").exists()


def test_checksum_mismatch_names_the_file(tmp_path, pat_path):
    mirror = itap_at.PAT_SOURCE.mirror_path(tmp_path / "mirror")
    mirror.parent.mkdir(parents=True)
    mirror.write_bytes(pat_path.read_bytes()[:-100])  # truncated
    with pytest.raises(BuildError) as error:
        itap_at.build(tmp_path / "out", source_dir=tmp_path / "mirror")
    assert str(mirror) in str(error.value) and "checksum mismatch" in str(error.value)


def test_missing_mirror_file_says_what_it_expects(tmp_path):
    with pytest.raises(BuildError) as error:
        itap_at.build(tmp_path / "out", source_dir=tmp_path)
    assert "ART-Group-it/P-AT/Dataset/P-AT.json" in str(error.value)


def test_non_empty_output_needs_force(tmp_path, pat_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    # A folder of the user's files is never replaced, not even with --force (issue 15).
    for force in (False, True):
        with pytest.raises(BuildError, match="is not an equita build"):
            itap_at.build(out, pat_path=pat_path, force=force)
        assert (out / "keep.txt").read_text() == "user data"
    # A build is replaced, and only with --force.
    built = tmp_path / "built"
    itap_at.build(built, pat_path=pat_path)
    with pytest.raises(BuildError, match="pass --force"):
        itap_at.build(built, pat_path=pat_path)
    itap_at.build(built, pat_path=pat_path, force=True)
    assert (built / "manifest.json").is_file()
