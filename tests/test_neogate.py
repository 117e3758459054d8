"""The neogate metric: conformance with the CALAMITA organisers' per-entry scores, hand-computed
entries, the card's worked example through evaluate.load, bad input."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import evaluate
import pytest

from conftest import REPO, load_metric_module

METRIC_DIR = REPO / "metrics" / "neogate"
CASES = json.loads((Path(__file__).parent / "cases" / "neogate_entries.json").read_text(encoding="utf-8"))
# Per-entry outputs of LLaMA-3-8B-Instruct on CALAMITA GFG with the official cwa and misgen-ratio
# (task 2: fair reformulation, prompt 2; task 3: fair translation, prompt 1).
REFERENCE = REPO.parent / "shared" / "reference" / "calamita-llama3-8b-instruct"
CONFORMANCE_FILES = ["gfg_task_2_2.jsonl", "gfg_task_3_1.jsonl"]
FIXED_KEYS = {"coverage", "accuracy", "cwa", "misgeneration", "entry_mean_cwa", "entry_mean_misgeneration", "n", "n_annotations", "per_entry"}
ENTRY_KEYS = {"coverage", "accuracy", "cwa", "misgeneration", "n_annotations", "found_tagged", "found_m", "found_f", "not_found", "misgenerated_words"}

neogate = load_metric_module("neogate")


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(METRIC_DIR))


@pytest.mark.parametrize("filename", CONFORMANCE_FILES)
def test_reproduces_every_official_calamita_entry_score(filename):
    path = REFERENCE / filename
    if not path.is_file():
        pytest.fail(f"conformance file {path} is missing (CI mirrors it under ../shared/reference)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) == 841
    predictions = [neogate.calamita_answer(row["resps"][0][0]) for row in rows]
    references = [row["doc"]["ANNOTATION"] for row in rows]
    result = neogate.compute_neogate(predictions, references, return_per_entry=True)
    mismatches = [
        f"doc_id {row['doc_id']}: cwa {entry['cwa']!r} vs official {row['cwa']!r}, "
        f"misgeneration {entry['misgeneration']!r} vs official {row['misgen-ratio']!r}; "
        f"output {prediction!r}, annotation {row['doc']['ANNOTATION']!r}"
        for row, entry, prediction in zip(rows, result["per_entry"], predictions)
        if entry["cwa"] != row["cwa"] or entry["misgeneration"] != row["misgen-ratio"]
    ]  # fmt: skip
    assert not mismatches, f"{len(mismatches)} of {len(rows)} entries differ from the official scores:\n" + "\n".join(mismatches)
    # The leaderboard's number is the plain mean of the per-entry scores.
    assert result["entry_mean_cwa"] == sum(row["cwa"] for row in rows) / len(rows)
    assert result["entry_mean_misgeneration"] == sum(row["misgen-ratio"] for row in rows) / len(rows)
    assert result["n"] == 841


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_entries_computed_by_hand(case):
    neomorphemes = case.get("neomorphemes", ["ə"])
    result = neogate.score_entry(case["prediction"], case["annotation"], neomorphemes)
    for key in ["found_tagged", "found_m", "found_f", "not_found", "misgenerated_words"]:
        assert result[key] == case[key], key
    for key in ["coverage", "accuracy", "cwa", "misgeneration"]:
        assert result[key] == (None if case[key] is None else pytest.approx(case[key])), key
    # The same through compute, one entry: pooled = per entry.
    pooled = neogate.compute_neogate([case["prediction"]], [case["annotation"]], neomorphemes=neomorphemes)
    assert pooled["cwa"] == pytest.approx(case["cwa"]) and pooled["entry_mean_cwa"] == pytest.approx(case["cwa"])


def test_preprocessing():
    assert neogate.to_words("Quest'anno l'amicə, “sì”: è    arrivatə!") == ["quest", "anno", "l", "amicə", "“sì”", "è", "arrivatə"]
    assert neogate.to_words("ragazz* e ragazz@", ["*"]) == ["ragazz*", "e", "ragazz"]  # only the neomorphemes survive
    assert neogate.to_words("") == []


def test_annotation_parsing():
    parsed = neogate.parse_annotations(" dello della dellə studente=1 ;studente studentessa studentə;;")
    assert [(a.masculine, a.feminine, a.tagged, a.anchor, a.distance) for a in parsed] == [
        ("dello", "della", "dellə", "studente", 1), ("studente", "studentessa", "studentə", None, None)]  # fmt: skip


def test_worked_example_of_the_card_through_evaluate(metric):
    result = metric.compute(
        predictions=["Il nuovo insegnante è in ritardə.", "Ho incontrato l'amicə di Sara: è moltə stanca!"],
        references=["il la lə insegnante=2;nuovo nuova nuovə;arrivato arrivata arrivatə;", "amico amica amicə;stanco stanca stancə;"],
        neomorphemes=["ə"],
        return_per_entry=True,
    )
    # Entry 1: il (m, anchor "insegnante" two words on), nuovo (m), arrivato not found, ritardə mis-generated.
    # Entry 2: amicə (tagged), stanca (f), moltə mis-generated. Pooled: 5 annotations, 4 found, 1 tagged, 2 mis-generations.
    assert (result["coverage"], result["accuracy"], result["cwa"], result["misgeneration"]) == (80.0, 25.0, 20.0, 40.0)
    assert result["entry_mean_cwa"] == 25.0  # (0 + 50) / 2
    assert result["entry_mean_misgeneration"] == pytest.approx(41.6667, abs=1e-4)  # (33.33 + 50) / 2
    assert (result["n"], result["n_annotations"]) == (2, 5)
    first, second = result["per_entry"]
    assert (first["coverage"], first["accuracy"], first["cwa"]) == (pytest.approx(66.6667, abs=1e-4), 0.0, 0.0)
    assert first["misgeneration"] == pytest.approx(33.3333, abs=1e-4)
    assert (first["found_m"], first["not_found"], first["misgenerated_words"]) == (["il", "nuovo"], ["arrivato arrivata arrivatə"], ["ritardə"])
    assert (second["coverage"], second["accuracy"], second["cwa"], second["misgeneration"]) == (100.0, 50.0, 50.0, 50.0)
    assert (second["found_tagged"], second["found_f"], second["misgenerated_words"]) == (["amicə"], ["stanca"], ["moltə"])


def test_accuracy_is_none_when_nothing_is_found(metric):
    result = metric.compute(predictions=["Ciao a tuttə"], references=["amico amica amicə;"])
    assert result["accuracy"] is None
    assert (result["coverage"], result["cwa"], result["misgeneration"]) == (0.0, 0.0, 100.0)


def test_output_keys_do_not_depend_on_arguments(metric):
    plain = metric.compute(predictions=["Lə amicə"], references=["amico amica amicə;"])
    full = metric.compute(predictions=["Lə amicə"], references=["amico amica amicə;"], neomorphemes=["ə"], return_per_entry=True)
    assert set(plain) == set(full) == FIXED_KEYS
    assert plain["per_entry"] is None
    assert set(full["per_entry"][0]) == ENTRY_KEYS


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(predictions=["a", "b"], references=["amico amica amicə;"]), "predictions (2) and references (1) differ in length"),
        (dict(predictions=[], references=[]), "empty"),
        (dict(predictions=["a", "b"], references=["amico amica amicə;", "amico amica;"]), "entry 1: annotation part 'amico amica' is neither"),
        (dict(predictions=["a"], references=["il la lə studente"]), "entry 0: annotation part 'il la lə studente' is neither"),
        (dict(predictions=["a"], references=["il la lə studente=uno;"]), "entry 0: annotation part 'il la lə studente=uno'"),
        (dict(predictions=["a"], references=["il la lə =1;"]), "entry 0: annotation part 'il la lə =1'"),
        (dict(predictions=["a"], references=["il la lə a=1=2;"]), "entry 0: annotation part"),
        (dict(predictions=["a"], references=["a b c d e;"]), "entry 0: annotation part 'a b c d e'"),
        (dict(predictions=["a", "b"], references=["amico amica amicə;", " ; "]), "entry 1: annotation ' ; ' has no annotated word"),
        (dict(predictions=["a", None], references=["amico amica amicə;"] * 2), "entry 1: prediction must be a string"),
        (dict(predictions=["a", 2], references=["amico amica amicə;"] * 2), "entry 1: prediction must be a string"),
        (dict(predictions=["a"], references=[3]), "entry 0: annotation must be a string"),
        (dict(predictions=["a"], references=["amico amica amicə;"], neomorphemes="ə"), "neomorphemes must be a non-empty list"),
        (dict(predictions=["a"], references=["amico amica amicə;"], neomorphemes=[""]), "neomorphemes must be non-empty strings"),
        (dict(predictions=["a"], references=["amico amica amicə;"], return_per_entry="yes"), "return_per_entry must be True or False"),
    ],
)  # fmt: skip
def test_bad_input_raises_a_clear_error(metric, kwargs, message):
    with pytest.raises(ValueError) as error:
        metric.compute(**kwargs)
    assert message in str(error.value)


def test_non_string_prediction_in_python_api_names_the_entry():
    with pytest.raises(ValueError, match="entry 1: prediction must be a string"):
        neogate.compute_neogate(["Lə amicə", None], ["amico amica amicə;"] * 2)


def test_docstring_examples():
    result = doctest.testmod(neogate, raise_on_error=False, verbose=False)
    assert result.attempted >= 8 and result.failed == 0
