"""The gente_neutrality metric: hand-computed accuracy, the organisers' per-entry scores, a real classifier run."""

from __future__ import annotations

import doctest
import json

import evaluate
import pytest

from conftest import REPO, load_metric_module

METRIC_DIR = REPO / "metrics" / "gente_neutrality"
REFERENCE = REPO.parent / "shared" / "reference" / "calamita-llama3-8b-instruct" / "gfg_task_2_3.jsonl"
KEYS = {"accuracy", "n", "n_correct", "by_expected", "predicted_neutral", "labels", "model", "tokenizer"}

gente = load_metric_module("gente_neutrality")


@pytest.mark.parametrize(
    "labels, expected, accuracy, neutral, gendered",
    [
        (["neutral"] * 4, ["neutral"] * 4, 100.0, 100.0, None),
        (["gendered", "neutral"], ["neutral", "neutral"], 50.0, 50.0, None),
        (["gendered", "gendered", "neutral"], ["gendered", "neutral", "gendered"], 100 / 3, 0.0, 50.0),
        (["neutral", "gendered", "neutral", "neutral"], ["neutral", "neutral", "gendered", "neutral"], 50.0, 200 / 3, 0.0),
    ],
)
def test_accuracy_by_hand(labels, expected, accuracy, neutral, gendered):
    result = gente.score_labels(labels, expected)
    assert result["accuracy"] == pytest.approx(accuracy)
    assert result["by_expected"]["neutral"]["accuracy"] == (pytest.approx(neutral) if neutral is not None else None)
    assert result["by_expected"]["gendered"]["accuracy"] == (pytest.approx(gendered) if gendered is not None else None)
    assert result["n"] == len(labels) and result["n_correct"] == sum(a == b for a, b in zip(labels, expected))


def test_aggregation_reproduces_the_organisers_task_2_3_score():
    """Reformulation with GeNTE expects neutral everywhere: an entry scored 1 was labelled neutral."""
    rows = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 750
    labels = ["neutral" if row["acc_gente"] == 1 else "gendered" for row in rows]
    result = gente.score_labels(labels, ["neutral"] * len(rows))
    assert result["n_correct"] == 347
    assert result["accuracy"] == pytest.approx(100 * sum(row["acc_gente"] for row in rows) / 750)
    assert round(result["accuracy"], 2) == 46.27


def test_evaluate_load_runs_a_local_classifier_batched(neutrality_classifier):
    metric = evaluate.load(str(METRIC_DIR))
    outputs = ["La persona che insegna è arrivata.", "Il professore è arrivato.", "Chi studia qui?"] * 5
    expected = ["neutral", "gendered", "neutral"] * 5
    result = metric.compute(predictions=outputs, references=expected, model=str(neutrality_classifier), tokenizer=str(neutrality_classifier),
                            batch_size=4, return_labels=True)  # fmt: skip
    assert set(result) == KEYS
    assert result["labels"] == ["neutral"] * 15  # the head always says class 0
    assert result["accuracy"] == pytest.approx(100 * 10 / 15)
    assert result["by_expected"] == {"neutral": {"accuracy": 100.0, "n": 10}, "gendered": {"accuracy": 0.0, "n": 5}}
    assert result["model"] == str(neutrality_classifier)


def test_a_batch_of_empty_outputs_is_classified(neutrality_classifier):
    # The tiny classifier's tokenizer adds no special tokens: empty outputs gave a batch of length 0.
    metric = evaluate.load(str(METRIC_DIR))
    result = metric.compute(predictions=["", "", "Chi studia qui?"], references=["neutral", "gendered", "neutral"], model=str(neutrality_classifier),
                            tokenizer=str(neutrality_classifier), batch_size=2, return_labels=True)  # fmt: skip
    assert result["labels"] == ["neutral"] * 3 and result["n"] == 3


def test_unreachable_default_classifier_says_how_to_run_offline():
    with pytest.raises(OSError, match="Offline, pass model= and tokenizer= local paths"):
        gente.load_classifier()


@pytest.mark.parametrize(
    "predictions, references, message",
    [
        (["a"], ["neutral", "neutral"], r"predictions \(1\) and references \(2\) differ in length"),
        ([], [], "predictions is empty"),
        (["a", 3], ["neutral", "neutral"], "entry 1: prediction must be a string"),
        (["a"], ["neutro"], "entry 0: reference must be 'neutral' or 'gendered', got 'neutro'"),
    ],
)
def test_bad_input(predictions, references, message):
    with pytest.raises(ValueError, match=message):
        gente.compute_accuracy(predictions, references, lambda texts: ["neutral"] * len(texts))


def test_a_classifier_returning_bad_labels_is_caught():
    with pytest.raises(ValueError, match="the classifier returned 1 labels for 2 outputs"):
        gente.compute_accuracy(["a", "b"], ["neutral", "neutral"], lambda texts: ["neutral"])
    with pytest.raises(ValueError, match="entry 0: classifier label must be 'neutral' or 'gendered', got 'LABEL_0'"):
        gente.compute_accuracy(["a"], ["neutral"], lambda texts: ["LABEL_0"])


def test_doctests():
    assert doctest.testmod(gente, raise_on_error=True).attempted >= 3
