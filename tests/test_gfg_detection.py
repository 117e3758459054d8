"""The gfg_detection metric: splitting rules, hand-computed scores with toy similarities, greedy
matching, the CALAMITA conformance suite (MiniLM), evaluate.load, bad input, doctests."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import evaluate
import pytest

from conftest import REPO, load_metric_module, minilm_path

METRIC_DIR = REPO / "metrics" / "gfg_detection"
CASES = json.loads((Path(__file__).parent / "cases" / "gfg_detection_cases.json").read_text(encoding="utf-8"))
REFERENCE = REPO.parent / "shared" / "reference" / "calamita-llama3-8b-instruct" / "gfg_task_1_1.jsonl"
MINILM = minilm_path()
MINILM_LAYERS = 6

gfg = load_metric_module("gfg_detection")


def table_similarity(table: dict):
    """A similarity read from {"gold|pred": score}; pairs not in the table score 0."""

    def similarity(golds, preds):
        return [[table.get(f"{g}|{p}", 0.0) for p in preds] for g in golds]

    return similarity


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(METRIC_DIR))


@pytest.fixture(scope="module")
def minilm():
    """One BERTScore similarity with the local MiniLM, shared (and cached) by the tests below."""
    return gfg.BERTScoreSimilarity(MINILM, MINILM_LAYERS)


@pytest.fixture(scope="module")
def reference_rows():
    # The conformance suite is part of the product's acceptance: a missing file fails, never skips.
    assert REFERENCE.is_file(), f"{REFERENCE} is missing: the organisers' reference outputs sit beside the repository in shared/"
    rows = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) == 841
    return rows


# --- splitting rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("a; b", ["a", "b"]),
        ("a ; b ; c", ["a", "b", "c"]),
        ("a, b", ["a", "b"]),
        ("a, b ; c", ["a, b", "c"]),  # ";" wins: commas inside an item are kept
        ("il docente", ["il docente"]),
        ("0", []),
        (" 0 \n", []),
        ("", []),
        ("   ", []),
        (";", []),
        ("a ;; b ;", ["a", "b"]),
        ("0 ; a", ["a"]),
        (" (errore)\n[Espressione]: 0", []),
        (" \n[Espressione]: lo studente", ["lo studente"]),
        ("[Genere marcato]: x\n[Espressione]: a ; b", ["a", "b"]),  # the last "]:" counts
        ("0.", ["0."]),  # only a bare 0 means "none"
    ],
)
def test_splitting_rules(raw, expected):
    assert gfg.parse_expressions(raw) == expected


# --- hand-computed entries -------------------------------------------------------------------


def test_case_table_covers_both_modes_and_the_edge_cases():
    assert len(CASES) >= 12
    assert {c["paper"] for c in CASES} >= {0.0, 0.5, 1.0}
    assert any(c["paper"] != c["calamita"] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
@pytest.mark.parametrize("mode", ["paper", "calamita"])
def test_hand_computed_entry(case, mode):
    similarity = table_similarity(case["scores"] or {})
    result = gfg.compute_detection([case["prediction"]], [case["gold"]], similarity=similarity, mode=mode, return_per_entry=True)
    assert result["per_entry_f1"] == [pytest.approx(case[mode])]
    assert result["f1"] == pytest.approx(case[mode])


def test_mean_over_entries_with_exact_match_similarity():
    predictions = ["La studentessa ; preoccupata", "gli studenti, i docenti", "0", "0", "Il Rettore"]
    references = [["La studentessa", "preoccupata"], ["gli studenti"], ["il rettore"], [], ["il rettore", "i docenti"]]
    paper = gfg.compute_detection(predictions, references, similarity=gfg.exact_match_similarity, return_per_entry=True)
    # 2/2, 1/max(1,2), missed, nothing to find, 1/max(2,1) (exact match ignores case)
    assert paper["per_entry_f1"] == [1.0, 0.5, 0.0, 1.0, 0.5]
    assert paper["f1"] == pytest.approx(3.0 / 5)
    calamita = gfg.compute_detection(predictions, references, similarity=gfg.exact_match_similarity, mode="calamita", return_per_entry=True)
    assert calamita["per_entry_f1"] == [1.0, 1.0, 0.0, 1.0, 1.0]
    assert calamita["f1"] == pytest.approx(0.8)
    assert (paper["model_type"], paper["num_layers"], paper["mode"], paper["n"]) == (None, None, "paper", 5)


def test_greedy_matching_takes_the_highest_score_first():
    # a-x is taken first (0.9), which forces b-y (0.1), though a-y + b-x would sum to 1.65.
    assert gfg.greedy_match([[0.9, 0.8], [0.85, 0.1]]) == [(0, 0, 0.9), (1, 1, 0.1)]
    # Ties: lower gold index, then lower predicted index.
    assert gfg.greedy_match([[0.5, 0.5], [0.5, 0.5]]) == [(0, 0, 0.5), (1, 1, 0.5)]
    # More predictions than golds: the extra prediction stays unmatched.
    assert gfg.greedy_match([[0.2, 0.7, 0.6]]) == [(0, 1, 0.7)]
    assert gfg.score_entry(["a"], ["x", "y", "z"], [[0.2, 0.7, 0.6]]) == pytest.approx(0.7 / 3)


def test_similarity_gets_stripped_golds_and_parsed_predictions_only_when_both_exist():
    calls = []

    def spy(golds, preds):
        calls.append((list(golds), list(preds)))
        return [[1.0] * len(preds) for _ in golds]

    gfg.compute_detection(["a ; b", "0", "c"], [[" g1 ", ""], ["g2"], []], similarity=spy)
    assert calls == [(["g1"], ["a", "b"])]


# --- BERTScore: one scorer, batched ----------------------------------------------------------


def test_bertscore_scorer_is_loaded_once_and_scores_all_pairs_in_one_batch(monkeypatch):
    created, batches = [], []

    class FakeScorer:
        def __init__(self, **kwargs):
            created.append(kwargs)

        def score(self, cands, refs, batch_size=64):
            import torch

            batches.append(list(zip(refs, cands)))
            f1 = torch.tensor([1.0 if c == r else 0.5 for c, r in zip(cands, refs)])
            return f1, f1, f1

    monkeypatch.setattr(gfg.bert_score, "BERTScorer", FakeScorer)
    result = gfg.compute_detection(
        ["a ; b", "c", "a", "0"], [["a"], ["c", "d"], ["a"], ["e"]], model_type="some/model", num_layers=3, return_per_entry=True
    )
    assert len(created) == 1 and created[0]["num_layers"] == 3 and created[0]["rescale_with_baseline"] is False
    assert len(batches) == 1 and sorted(batches[0]) == [("a", "a"), ("a", "b"), ("c", "c"), ("d", "c")]
    assert result["per_entry_f1"] == [0.5, 0.5, 1.0, 0.0]
    assert (result["model_type"], result["num_layers"]) == ("some/model", 3)


def test_default_model_is_multilingual_bert_layer_9():
    similarity = gfg.BERTScoreSimilarity()
    assert (similarity.model_type, similarity.num_layers) == ("bert-base-multilingual-cased", 9)
    assert similarity._scorer is None  # nothing loaded until something is scored


def test_minilm_similarity_is_symmetric_enough_and_identity_is_one(minilm):
    scores = minilm(["lo studente", "ammalato"], ["lo studente", "la studentessa", "tavolo"])
    assert scores.shape == (2, 3)
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-5)
    assert 0 < scores[0, 1] < 1 and scores[0, 1] > scores[0, 2]


# --- conformance with the CALAMITA leaderboard -----------------------------------------------


def test_calamita_mode_reproduces_every_recorded_bert_f1(reference_rows, minilm):
    predictions = [row["resps"][0][0] for row in reference_rows]
    references = [row["doc"]["list_spans"] for row in reference_rows]
    result = gfg.compute_detection(predictions, references, similarity=minilm, mode="calamita", return_per_entry=True)
    recorded = [row["bert_f1"] for row in reference_rows]
    mismatches = [(i, got, want) for i, (got, want) in enumerate(zip(result["per_entry_f1"], recorded)) if got != want]
    assert mismatches == []
    assert result["n"] == 841
    assert result["f1"] == pytest.approx(sum(recorded) / 841) == pytest.approx(0.8133, abs=1e-4)
    # The rule in words: an entry scores 1 exactly when the model named some expression.
    assert all((gfg.parse_expressions(p) != []) == (want == 1.0) for p, want in zip(predictions, recorded))


def test_paper_mode_on_the_reference(reference_rows, minilm):
    predictions = [row["resps"][0][0] for row in reference_rows]
    references = [row["doc"]["list_spans"] for row in reference_rows]
    result = gfg.compute_detection(predictions, references, similarity=minilm, return_per_entry=True)
    scores = result["per_entry_f1"]
    assert len(scores) == 841 and all(0.0 <= s <= 1.0 for s in scores)
    assert result["f1"] == pytest.approx(sum(scores) / 841)
    assert result["f1"] < 0.8133  # partial matches score less than the leaderboard's 1
    assert result["f1"] == pytest.approx(0.4419, abs=0.01)  # MiniLM; the value depends on the encoder
    assert scores[0] == 0.0  # "0" against ["ammalato"]
    assert scores[1] == pytest.approx(0.5, abs=1e-6)  # "lo studente" against ["dello studente", "lo studente"]
    assert scores[5] == pytest.approx(1.0, abs=1e-6)  # both gold expressions, verbatim
    assert scores[7] == pytest.approx(1.0, abs=1e-6)  # "singoli doganieri", verbatim
    assert scores[8] == pytest.approx(0.5, abs=1e-6)  # "Lo studente" against ["Lo studente", "preoccupato"]
    assert 0.0 < scores[10] < 0.5  # "sua nonna" against ["Il bambino", "gli"]: one weak pair over 2
    # Entry 544's gold holds an empty string, dropped: 2 golds against 3 predictions.
    assert reference_rows[544]["doc"]["list_spans"][-1] == ""
    assert 0.0 < scores[544] < 2 / 3 + 1e-6


# --- evaluate ----------------------------------------------------------------------------------


def test_evaluate_load_with_a_local_encoder(metric, minilm):
    predictions = ["[Espressione]: lo studente ; preoccupato", "0", "0", "la studentessa"]
    references = [["Lo studente", "preoccupato"], ["il rettore"], [], ["lo studente"]]
    result = metric.compute(predictions=predictions, references=references, model_type=MINILM, num_layers=MINILM_LAYERS, return_per_entry=True)
    assert set(result) == {"f1", "n", "mode", "model_type", "num_layers", "per_entry_f1"}
    assert (result["n"], result["mode"], result["model_type"], result["num_layers"]) == (4, "paper", MINILM, MINILM_LAYERS)
    direct = gfg.compute_detection(predictions, references, similarity=minilm, return_per_entry=True)
    assert result["per_entry_f1"] == pytest.approx(direct["per_entry_f1"], abs=1e-6)
    assert result["per_entry_f1"][1:3] == [0.0, 1.0]
    assert 0.0 < result["per_entry_f1"][3] < 1.0
    calamita = metric.compute(predictions=predictions, references=references, model_type=MINILM, num_layers=MINILM_LAYERS, mode="calamita")
    assert calamita["f1"] == 0.75 and calamita["per_entry_f1"] is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(predictions=["a", "b"], references=[["a"]]), "differ in length"),
        (dict(predictions=[], references=[]), "empty"),
        (dict(predictions=[1], references=[["a"]]), "entry 0: prediction must be a string"),
        (dict(predictions=["a", None], references=[["a"], ["b"]]), "entry 1: prediction must be a string"),
        (dict(predictions=["a", "b"], references=[["a"], "b"]), "entry 1: reference must be a list"),
        (dict(predictions=["a"], references=[[3]]), "entry 0: gold expressions must be strings"),
        (dict(predictions=["a"], references=[["a"]], mode="strict"), "mode must be"),
        (dict(predictions=["a"], references=[["b"]], model_type=MINILM), "num_layers is required"),
        (dict(predictions=["a"], references=[["b"]], model_type=MINILM, num_layers=0), "num_layers must be a positive integer"),
        (dict(predictions=["a"], references=[["b"]], model_type=MINILM, num_layers=12), "num_layers should be between"),
    ],
)  # fmt: skip
def test_bad_input_raises_a_clear_error(metric, kwargs, message):
    with pytest.raises(ValueError) as error:
        metric.compute(**kwargs)
    assert message in str(error.value)


def test_bad_similarity_output_names_the_entry():
    with pytest.raises(ValueError, match=r"entry 1: similarity must return a finite 1 x 2 matrix"):
        gfg.compute_detection(["a", "b ; c"], [["a"], ["b"]], similarity=lambda golds, preds: [[1.0]])
    with pytest.raises(ValueError, match="entry 0: similarity must return a finite"):
        gfg.compute_detection(["a"], [["a"]], similarity=lambda golds, preds: [[float("nan")]])
    with pytest.raises(ValueError, match="similarity must be a callable"):
        gfg.compute_detection(["a"], [["a"]], similarity="bertscore")


def test_output_keys_do_not_depend_on_arguments():
    plain = gfg.compute_detection(["a"], [["a"]], similarity=gfg.exact_match_similarity)
    full = gfg.compute_detection(["a"], [["a"]], similarity=gfg.exact_match_similarity, mode="calamita", return_per_entry=True)
    assert set(plain) == set(full) == {"f1", "n", "mode", "model_type", "num_layers", "per_entry_f1"}
    assert plain["per_entry_f1"] is None


def test_docstring_examples():
    result = doctest.testmod(gfg, raise_on_error=False, verbose=False)
    assert result.attempted >= 10 and result.failed == 0


def test_worked_example_of_the_card():
    card = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    predictions = ["La studentessa ; preoccupata", "gli studenti, i docenti", "0", "0"]
    references = [["La studentessa", "preoccupata"], ["gli studenti"], ["il rettore"], []]
    paper = gfg.compute_detection(predictions, references, similarity=gfg.exact_match_similarity, return_per_entry=True)
    calamita = gfg.compute_detection(predictions, references, similarity=gfg.exact_match_similarity, mode="calamita")
    assert (paper["per_entry_f1"], paper["f1"], calamita["f1"]) == ([1.0, 0.5, 0.0, 1.0], 0.625, 0.75)
    assert "0.625" in card and "0.75" in card
    table = {"a|x": 0.9, "a|y": 0.8, "b|x": 0.85, "b|y": 0.1}
    assert gfg.compute_detection(["x ; y"], [["a", "b"]], similarity=table_similarity(table))["f1"] == pytest.approx(0.5)
    assert "(0.9 + 0.1) / 2 = 0.5" in card
