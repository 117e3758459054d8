"""The Gender-Fair Generation dataset: prompts against the organisers' logs, gold, sources, GFL-it files."""

from __future__ import annotations

import json
import shutil

import pytest
from datasets import load_dataset

from conftest import UPSTREAM
from equita.builders import gfg
from equita.builders.common import BuildError

REFERENCE = UPSTREAM.parent / "reference" / "calamita-llama3-8b-instruct"
LOGS = {
    "detection-neogate": "gfg_task_1_1.jsonl",
    "reformulation-neogate": "gfg_task_2_2.jsonl",
    "reformulation-gente": "gfg_task_2_3.jsonl",
    "translation-neogate": "gfg_task_3_1.jsonl",
}
GFLIT = [
    {"id_text": "t1", "text": "Tutti gli studenti iscritti devono presentarsi.", "list_spans": [
        {"span": "Tutti gli studenti iscritti", "start": 0, "end": 27, "labels": ["MASC-GEN"], "key_span": "studenti"}],
     "rewritten_texts_1": ["Tutte le persone iscritte devono presentarsi."], "rewritten_texts_2": "La comunità studentesca iscritta deve presentarsi."},
    {"id_text": "t2", "text": "La segreteria è aperta il lunedì.", "list_spans": []},
    {"id_text": "t3", "text": "Il docente riceve gli studenti.", "list_spans": [
        {"span": "Il docente", "start": 0, "end": 10, "labels": ["MASC"], "key_span": "docente"},
        {"span": "gli studenti", "start": 18, "end": 30, "labels": ["MASC-GEN"], "key_span": "studenti"}],
     "rewritten_texts_1": ["Chi insegna riceve la comunità studentesca."]},
]  # fmt: skip


def read_log(name: str) -> list[dict]:
    return [json.loads(line) for line in (REFERENCE / name).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def gfl_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("gflit") / "gflit.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in GFLIT), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gfg_dir(tmp_path_factory, gfl_file):
    out = tmp_path_factory.mktemp("gfg") / "gfg"
    gfg.build(out, source_dir=UPSTREAM, gfl_it=gfl_file)
    return out


def rows(folder, config):
    return load_dataset(str(folder), config, split="test").to_list()


@pytest.mark.parametrize("config", LOGS)
def test_prompts_reproduce_the_organisers_logs_byte_for_byte(gfg_dir, config):
    log = read_log(LOGS[config])
    built = rows(gfg_dir, config)
    assert len(built) == len(log)
    mismatched = [i for i, (row, entry) in enumerate(zip(built, log)) if row["prompt"] != entry["arguments"]["gen_args_0"]["arg_0"]]
    assert mismatched == []
    settings = log[0]["arguments"]["gen_args_0"]["arg_1"]
    assert (settings["max_gen_toks"], settings["do_sample"], settings["until"]) == (built[0]["max_new_tokens"], False, built[0]["stop"])


def test_neogate_rows_carry_annotation_and_inputs_as_the_challenge(gfg_dir):
    detection = rows(gfg_dir, "detection-neogate")
    log = read_log(LOGS["detection-neogate"])
    assert [r["input"] for r in detection] == [entry["doc"]["sentence"] for entry in log]  # REF-M then REF-F
    translation = rows(gfg_dir, "translation-neogate")
    assert translation[0]["annotation"] == "ammalato ammalata ammalatə;" and translation[0]["references"] == ["Quest’anno mi sono ammalatə già due volte."]
    assert translation[0]["input"] == "This year I got sick twice already."


@pytest.mark.parametrize(
    "index, expected",
    [(0, ["ammalato"]), (1, ["dello studente", "lo studente"]), (2, ["I giocatori compulsivi", "esperti"]), (421, ["esausta"]),
     (840, ["Le studentesse", "alla", "della professoressa"]), (53, ["istruttore"])],
)  # fmt: skip
def test_detection_gold_expressions(gfg_dir, index, expected):
    assert rows(gfg_dir, "detection-neogate")[index]["gold_expressions"] == expected


def test_detection_gold_agrees_with_the_organisers_where_their_spans_are_not_shifted(gfg_dir):
    built = rows(gfg_dir, "detection-neogate")
    log = read_log(LOGS["detection-neogate"])
    agree = sum(row["gold_expressions"] == entry["doc"]["list_spans"] for row, entry in zip(built, log))
    assert agree >= 670  # the rest: their spans sit one word early next to apostrophes (row 53: "L" for "istruttore")


def test_gente_configs_and_the_partial_mirror(gfg_dir):
    reformulation = rows(gfg_dir, "reformulation-gente")
    translation = rows(gfg_dir, "translation-gente")
    assert len(reformulation) == 750 and {r["expected_label"] for r in reformulation} == {"neutral"}
    assert len(translation) == 750 and {r["set"] for r in translation} == {"Set-N"}  # the mirror has Set-N only
    assert translation[0]["prompt"].endswith("[Inglese]: " + translation[0]["input"])
    card = (gfg_dir / "README.md").read_text()
    assert "GeNTE is partial in this build" in card and "recorded, not pinned" not in card.split("| Neo-GATE")[1].split("\n")[0]


def test_gflit_configs_from_a_user_file(gfg_dir):
    detection = rows(gfg_dir, "detection-gflit")
    assert [r["gold_expressions"] for r in detection] == [["Tutti gli studenti iscritti"], [], ["Il docente", "gli studenti"]]
    reformulation = rows(gfg_dir, "reformulation-gflit")
    assert [r["source_id"] for r in reformulation] == ["t1", "t3"]  # texts with spans and rewrites
    assert reformulation[0]["references"] == ["Tutte le persone iscritte devono presentarsi.", "La comunità studentesca iscritta deve presentarsi."]
    assert detection[0]["prompt"].endswith("[Genere marcato]: Tutti gli studenti iscritti devono presentarsi.")


def test_without_gflit_the_card_says_what_is_missing(tmp_path):
    gfg.build(tmp_path / "gfg", source_dir=UPSTREAM)
    card = (tmp_path / "gfg" / "README.md").read_text()
    assert "**Not in this build:** detection-gflit, reformulation-gflit" in card
    assert not (tmp_path / "gfg" / "detection-gflit").exists()


def test_build_is_deterministic(tmp_path, gfg_dir, gfl_file):
    gfg.build(tmp_path / "again", source_dir=UPSTREAM, gfl_it=gfl_file)
    for path in gfg_dir.rglob("*"):
        if path.is_file():
            assert (tmp_path / "again" / path.relative_to(gfg_dir)).read_bytes() == path.read_bytes(), path.name


def _mirror(tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(UPSTREAM / "FBK-MT", mirror / "FBK-MT")
    return mirror


def test_truncated_neogate_fails_its_checksum(tmp_path):
    mirror = _mirror(tmp_path)
    path = mirror / gfg.NEOGATE.repo / gfg.NEOGATE.path
    path.write_bytes(path.read_bytes()[:-500])
    with pytest.raises(BuildError, match="checksum mismatch for FBK-MT/Neo-GATE/adapted/Neo-GATE_schwa-simple.tsv"):
        gfg.build(tmp_path / "out", source_dir=mirror)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda lines: ["ID\tSET\tSRC"] + lines[1:], r"GeNTE.tsv:1: columns \['ID', 'SET', 'SRC'\]"),
        (lambda lines: lines[:5] + [lines[5].rsplit("\t", 2)[0]] + lines[6:], r"GeNTE.tsv:6: 6 fields, expected 8"),
        (lambda lines: lines[:3] + [lines[3].replace("Set-N", "Set-X", 1)] + lines[4:], r"GeNTE.tsv:4: SET 'Set-X'"),
        (lambda lines: lines[:-10], r"rows per set \{'Set-G': 0, 'Set-N': 740\}, expected \{'Set-G': 750, 'Set-N': 750\}"),
    ],
)
def test_damaged_gente_stops_the_build_with_file_and_line(tmp_path, edit, message):
    """A full GeNTE.tsv (unpinned: checked by structure) built from the Set-N rows, then damaged."""
    mirror = _mirror(tmp_path)
    folder = mirror / "FBK-MT" / "GeNTE"
    lines = (folder / "GeNTE.Set-N.tsv").read_text(encoding="utf-8").splitlines()
    (folder / "GeNTE.tsv").write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    with pytest.raises(BuildError, match=message):
        gfg.build(tmp_path / "out", source_dir=mirror)


@pytest.mark.parametrize(
    "annotation, message",
    [("ammalato ammalata;", "has 2 items; expected 3"), ("il la lə studente;", None), ("il la lə studente~1;", "must be anchor=distance"), (";;", "empty annotation")],
)
def test_annotation_parsing(annotation, message):
    if message is None:
        assert gfg.parse_annotation("il la lə studente=1;", "x") == [["il", "la", "lə", "studente=1"]]
        return
    with pytest.raises(BuildError, match=message):
        gfg.parse_annotation(annotation, "Neo-GATE.tsv:7")


@pytest.mark.parametrize(
    "records, message",
    [
        ("[{]", r"gflit.json:1: not valid JSON"),
        ([{"id_text": "a", "text": "x"}], r"record 1: missing 'list_spans'"),
        ([{"id_text": "a", "text": "Il docente", "list_spans": [{"span": "docente", "start": 0, "end": 7, "labels": [], "key_span": "d"}]}],
         r"record 1: span 0 is 'docente' but the text at 0-7 is 'Il doce'"),
        ([{"id_text": "a", "text": "x", "list_spans": []}, {"id_text": "a", "text": "y", "list_spans": []}], r"record 2: id_text 'a' repeated"),
        ([{"id_text": "a", "text": "x", "list_spans": [], "rewritten_texts_1": 3}], r"rewritten_texts_1 must be a string or a list of strings"),
        # JSON escapes that are no text: the build could not write a lone surrogate (UTF-8 has none) and refuses a raw NUL.
        ('[{"id_text": "t1", "text": "Il direttore \\ud800 arrivato.", "list_spans": []}]',
         r"record 1: text holds a lone surrogate \(\\ud800, a JSON escape that is no text\) at character 13"),
        ('[{"id_text": "t\\udc00", "text": "x", "list_spans": []}]', r"record 1: id_text holds a lone surrogate \(\\udc00"),
        ('[{"id_text": "a", "text": "x", "list_spans": [{"span": "x", "start": 0, "end": 1, "labels": ["\\ud83d"], "key_span": "x"}]}]',
         r"record 1: list_spans\[0\]\['labels'\]\[0\] holds a lone surrogate"),
        ('[{"id_text": "a", "text": "x", "list_spans": [], "\\ud800": 1}]', r"record 1: a field name holds a lone surrogate"),
        ('[{"id_text": "a", "text": "x\\u0000", "list_spans": []}]', r"record 1: text holds NUL \(\\u0000"),
    ],
)  # fmt: skip
def test_bad_gflit_files(tmp_path, records, message):
    path = tmp_path / "gflit.json"
    path.write_text(records if isinstance(records, str) else json.dumps(records), encoding="utf-8")
    with pytest.raises(BuildError, match=message):
        gfg.load_gflit(path)
