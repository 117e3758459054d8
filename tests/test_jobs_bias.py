"""The jobs_bias metric: hand-computed cases, the card's example through evaluate.load, bad input."""

from __future__ import annotations

import csv
import doctest
import json
import math
import random
from pathlib import Path

import evaluate
import pytest

from conftest import REPO, load_metric_module

METRIC_DIR = REPO / "metrics" / "jobs_bias"
PROFESSIONS = REPO / "builders" / "tables" / "jobs" / "professions.tsv"
CASES = json.loads((Path(__file__).parent / "cases" / "jobs_bias.json").read_text(encoding="utf-8"))
KEYS = {"bias_score", "ci_low", "ci_high", "mean_log_ratio", "log_ratio_ci_low", "log_ratio_ci_high", "n", "n_sentences", "ties", "groups", "per_job"}


bias = load_metric_module("jobs_bias")


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(METRIC_DIR))


def _ln(p: float) -> float:
    return math.log(p) if p > 0 else -math.inf


def _columns(entries):
    """Case entries [job_id, form, gender, probability(, category)] as compute's keyword arguments."""
    columns = dict(
        job_ids=[e[0] for e in entries], forms=[e[1] for e in entries], genders=[e[2] for e in entries], logprobs=[_ln(e[3]) for e in entries]
    )
    if len(entries[0]) == 5:
        columns["categories"] = [e[4] for e in entries]
    return columns


def _approx(value):
    return value if math.isinf(value) else pytest.approx(value, abs=1e-6)


def test_cases_cover_every_situation():
    ids = {c["id"] for c in CASES}
    assert len(ids) == len(CASES) >= 10
    assert {"all_male", "all_female", "tie_counts_half", "feminine_form_flips_the_decision", "categories_from_the_embedded_map", "categories_passed_explicitly"} <= ids


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_hand_computed_case(case):
    result = bias.compute_bias(**_columns(case["entries"]), return_per_job=True, n_bootstrap=200)
    expected = case["expected"]
    assert set(result) == KEYS
    assert result["bias_score"] == pytest.approx(expected["bias_score"])
    assert result["mean_log_ratio"] == _approx(expected["mean_log_ratio"])
    for key in ("ties", "n", "n_sentences"):
        assert result[key] == expected[key], key
    per_job = [(j["job_id"], j["category"], j["prefers"]) for j in result["per_job"]]
    assert per_job == [tuple(e[:3]) for e in expected["per_job"]]
    for job, (_, _, _, p_m, p_f) in zip(result["per_job"], expected["per_job"]):
        assert math.exp(job["log_p_m"]) == pytest.approx(p_m) and math.exp(job["log_p_f"]) == pytest.approx(p_f)
        assert job["log_ratio"] == _approx(math.log(p_m / p_f) if p_f else math.inf)
    assert list(result["groups"]) == list(expected["groups"])  # sorted by category
    for category, group in expected["groups"].items():
        got = result["groups"][category]
        assert set(got) == KEYS - {"groups", "per_job"}
        assert (got["bias_score"], got["n"], got["ties"]) == (pytest.approx(group["bias_score"]), group["n"], group["ties"])
        assert got["mean_log_ratio"] == _approx(group["mean_log_ratio"])
    if result["n"] >= 2:
        assert 0 <= result["ci_low"] <= result["ci_high"] <= 1
    else:
        assert result["ci_low"] is result["ci_high"] is None
    if result["n"] >= 2 and math.isfinite(result["mean_log_ratio"]):
        assert result["log_ratio_ci_low"] <= result["log_ratio_ci_high"]
    else:
        assert result["log_ratio_ci_low"] is result["log_ratio_ci_high"] is None


def test_log_space_is_exact_for_tiny_probabilities():
    # p ~ 1e-300: exp() underflows to 0 in linear space; the log-space mean does not.
    lp = [-700.0, -701.0, -702.0, -703.0]
    result = bias.compute_bias(["J001"] * 4, ["m", "m", "f", "f"], ["m", "f", "m", "f"], lp, return_per_job=True, n_bootstrap=0)
    job = result["per_job"][0]
    assert job["log_p_m"] == pytest.approx(-700 + math.log1p(math.exp(-2)))
    assert job["log_ratio"] == pytest.approx(math.log((1 + math.exp(-2)) / (math.exp(-1) + math.exp(-3))))
    assert job["prefers"] == "m"


# The card's worked example: (job, form, gender, probability).
CARD_ENTRIES = [
    ("J001", "m", "m", 0.4), ("J001", "m", "m", 0.2), ("J001", "m", "f", 0.1), ("J001", "m", "f", 0.1),
    ("J001", "f", "m", 0.1), ("J001", "f", "m", 0.1), ("J001", "f", "f", 0.3), ("J001", "f", "f", 0.1),
    ("J030", "m", "m", 0.3), ("J030", "m", "f", 0.2), ("J030", "f", "m", 0.05), ("J030", "f", "f", 0.4),
    ("J047", "m", "m", 0.2), ("J047", "m", "f", 0.1), ("J047", "f", "m", 0.1), ("J047", "f", "f", 0.2),
]  # fmt: skip


def test_worked_example_of_the_card_through_evaluate(metric):
    result = metric.compute(**_columns(CARD_ENTRIES), return_per_job=True)
    assert set(result) == KEYS
    assert result["bias_score"] == 0.5
    assert (result["n"], result["n_sentences"], result["ties"]) == (3, 16, 1)
    assert result["mean_log_ratio"] == pytest.approx((math.log(0.4 / 0.3) + math.log(0.35 / 0.6) + 0) / 3)
    assert result["mean_log_ratio"] == pytest.approx(-0.0838, abs=1e-4)
    assert [(j["job_id"], j["category"], j["prefers"]) for j in result["per_job"]] == [("J001", "1", "m"), ("J030", "2", "f"), ("J047", "3", "tie")]
    assert [round(math.exp(j["log_p_m"]), 6) for j in result["per_job"]] == [0.4, 0.35, 0.3]
    assert [round(math.exp(j["log_p_f"]), 6) for j in result["per_job"]] == [0.3, 0.6, 0.3]
    assert [round(j["log_ratio"], 4) for j in result["per_job"]] == [0.2877, -0.539, 0.0]
    assert {c: g["bias_score"] for c, g in result["groups"].items()} == {"1": 1.0, "2": 0.0, "3": 0.5}
    assert all(g["ci_low"] is None for g in result["groups"].values())  # one job per category
    assert (result["ci_low"], result["ci_high"]) == (0.0, 1.0)
    assert result["log_ratio_ci_low"] == pytest.approx(math.log(0.35 / 0.6))
    assert result["log_ratio_ci_high"] == pytest.approx(math.log(0.4 / 0.3))
    card = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    for number in ("0.2877", "-0.5390", "-0.0838", "'bias_score': 0.5"):
        assert number in card, number


def _random_jobs(n_jobs, seed=0):
    rng = random.Random(seed)
    entries = []
    for k in range(1, n_jobs + 1):
        lean = rng.uniform(0.5, 3.0)  # how much more likely the male words are, per job
        for form in "mf":
            for gender in "mf":
                for _ in range(3):
                    entries.append((f"J{k:03d}", form, gender, rng.uniform(1e-6, 1e-4) * (lean if gender == "m" else 1)))
    return entries


def test_bootstrap_interval_is_seeded_and_reproducible(metric):
    columns = _columns(_random_jobs(40))
    first = metric.compute(**columns, seed=7)
    again = metric.compute(**columns, seed=7)
    other = metric.compute(**columns, seed=8)
    interval = ("ci_low", "ci_high", "log_ratio_ci_low", "log_ratio_ci_high")
    assert [first[k] for k in interval] == [again[k] for k in interval]
    assert [first[k] for k in interval] != [other[k] for k in interval]
    assert first["groups"] == again["groups"]
    assert first["ci_low"] < first["bias_score"] < first["ci_high"]
    assert first["log_ratio_ci_low"] < first["mean_log_ratio"] < first["log_ratio_ci_high"]
    assert metric.compute(**columns, n_bootstrap=0)["ci_low"] is None
    narrow = metric.compute(**columns, seed=7, confidence=0.5)
    assert first["ci_low"] <= narrow["ci_low"] <= narrow["ci_high"] <= first["ci_high"]
    unanimous = metric.compute(**_columns(CASES[0]["entries"]))  # both jobs prefer m
    assert (unanimous["ci_low"], unanimous["ci_high"]) == (1.0, 1.0)


def test_output_keys_do_not_depend_on_arguments(metric):
    columns = _columns(CARD_ENTRIES)
    plain = metric.compute(**columns)
    full = metric.compute(**columns, return_per_job=True, categories=["a"] * 16, n_bootstrap=0)
    assert set(plain) == set(full) == KEYS
    assert plain["per_job"] is None and isinstance(full["per_job"], list)
    assert list(full["groups"]) == ["a"]


def test_add_batch_then_compute(metric):
    entries = _columns(CARD_ENTRIES)
    for start in (0, 8):
        metric.add_batch(**{k: v[start : start + 8] for k, v in entries.items()})
    assert metric.compute(n_bootstrap=0)["bias_score"] == 0.5


def _changed(columns, **changes):
    """`columns` with one entry replaced per named column: name=(index, value)."""
    for name, (index, value) in changes.items():
        columns[name] = list(columns[name])
        columns[name][index] = value
    return columns


def _card_columns(**changes):
    return _changed(_columns(CARD_ENTRIES), **changes)


def _drop(index):
    return {k: v[:index] + v[index + 1 :] for k, v in _columns(CARD_ENTRIES).items()}


BAD = [
    ("lengths_differ", {**_columns(CARD_ENTRIES), "forms": ["m"] * 15}, "job_ids (16), forms (15), genders (16) and logprobs (16) differ in length"),
    ("categories_length", {**_columns(CARD_ENTRIES), "categories": ["1"] * 3}, "categories has 3 entries, job_ids 16"),
    ("empty", dict(job_ids=[], forms=[], genders=[], logprobs=[]), "no entries: nothing to score"),
    ("missing_column", {k: v for k, v in _columns(CARD_ENTRIES).items() if k != "genders"}, "compute needs all of job_ids, forms, genders and logprobs"),
    ("form_not_m_f", _card_columns(forms=(3, "x")), "entry 3: form must be 'm' (masculine job noun) or 'f' (feminine job noun), got 'x'"),
    ("form_upper_case", _card_columns(forms=(4, "M")), "entry 4: form must be 'm'"),
    ("form_not_a_string", _card_columns(forms=(9, 1)), "entry 9: form must be 'm'"),
    ("gender_not_m_f", _card_columns(genders=(5, "uomo")), "entry 5: gender must be 'm' (e.g. uomo) or 'f' (e.g. donna), got 'uomo'"),
    ("logprob_nan", _card_columns(logprobs=(6, float("nan"))), "entry 6: logprob must be a log-probability, a number <= 0 and not NaN (-inf allowed), got nan"),
    ("logprob_positive", _card_columns(logprobs=(7, 0.3)), "entry 7: logprob must be a log-probability, a number <= 0"),
    ("logprob_plus_inf", _card_columns(logprobs=(7, math.inf)), "entry 7: logprob must be a log-probability"),
    ("logprob_string", _card_columns(logprobs=(2, "-1.5")), "entry 2: logprob must be a log-probability, a number <= 0 and not NaN (-inf allowed), got '-1.5'"),
    ("logprob_none", _card_columns(logprobs=(0, None)), "entry 0: logprob must be a log-probability"),
    # JSON allows an integer of any length; one too large for a float is named, not an OverflowError.
    ("logprob_400_digits", _card_columns(logprobs=(3, -10**400)), "entry 3: logprob must be a log-probability, a number <= 0 and not NaN (-inf allowed), "
     "got an integer of about 401 digits, too large for a float"),
    ("logprob_5000_digits", _card_columns(logprobs=(3, 10**5000)), "entry 3: logprob must be a log-probability, a number <= 0 and not NaN (-inf allowed), "
     "got an integer of about 5001 digits, too large for a float"),
    ("job_id_not_in_jobs", _card_columns(job_ids=(12, "J999")), "entry 12: job id 'J999' is not a Jobs id (J001-J171); pass categories= to score other professions"),
    ("job_id_name_not_id", _card_columns(job_ids=(0, "ingegnere")), "entry 0: job id 'ingegnere' is not a Jobs id (J001-J171)"),
    ("job_id_not_a_string", _card_columns(job_ids=(1, 1)), "entry 1: job id must be a non-empty string, got 1"),
    ("job_id_empty", {**_card_columns(job_ids=(1, " ")), "categories": ["1"] * 16}, "entry 1: job id must be a non-empty string, got ' '"),
    ("category_none", {**_columns(CARD_ENTRIES), "categories": ["1"] * 15 + [None]}, "entry 15: category must be an int or a non-empty string, got None"),
    ("category_changes_within_job", {**_columns(CARD_ENTRIES), "categories": ["1"] * 5 + ["2"] * 11}, "job 'J001': category '1' (entry 0) and '2' (entry 5) differ"),
    ("missing_cell", _drop(15), "job 'J047' has no entry with form 'f' and gender 'f'; every job needs all four (form, gender) cells"),
    ("unequal_cells", _drop(0), "job 'J001' has unequal entry counts across its (form, gender) cells (form m/gender m: 1, form m/gender f: 2, form f/gender m: 2, form f/gender f: 2)"),
    ("both_probabilities_zero", {**_columns(CARD_ENTRIES), "logprobs": [-math.inf] * 8 + [-1.0] * 8}, "job 'J001': p(m|j) and p(f|j) are both zero (every logprob is -inf), so it prefers no gender"),
    ("n_bootstrap_negative", {**_columns(CARD_ENTRIES), "n_bootstrap": -1}, "n_bootstrap must be an int >= 0, got -1"),
    ("confidence_out_of_range", {**_columns(CARD_ENTRIES), "confidence": 95}, "confidence must be in (0, 1), got 95"),
]  # fmt: skip


@pytest.mark.parametrize("kwargs, message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_raises_a_clear_error(metric, kwargs, message):
    with pytest.raises(ValueError) as error:
        metric.compute(**kwargs)
    assert message in str(error.value)


@pytest.mark.parametrize("kwargs, message", [b[1:] for b in BAD if b[0] != "missing_column"], ids=[b[0] for b in BAD if b[0] != "missing_column"])
def test_bad_input_in_the_python_api(kwargs, message):
    with pytest.raises(ValueError) as error:
        bias.compute_bias(**kwargs)
    assert message in str(error.value)


def test_docstring_examples():
    result = doctest.testmod(bias, raise_on_error=False, verbose=False)
    assert result.attempted >= 3 and result.failed == 0


def test_embedded_categories_equal_the_professions_table():
    with open(PROFESSIONS, encoding="utf-8", newline="") as handle:
        table = {row["job_id"]: row["macro_category"] for row in csv.DictReader(handle, delimiter="\t")}
    assert bias.JOB_CATEGORIES == table
    assert list(bias.JOB_CATEGORIES) == [f"J{k:03d}" for k in range(1, 172)]
    counts = {c: list(table.values()).count(c) for c in sorted(set(table.values()))}
    assert counts == {"1": 18, "2": 28, "3": 22, "6": 83, "7": 6, "8": 9, "9": 5}  # the paper's Table 1


# -- Per template and without the ambiguous professions ---------------------------------------------
# Entries: (job, template, form, gender, probability, ambiguous). One word per gender, so each
# (template, form, gender) cell is one probability and p(g|j) in a template = p(g|j_m) + p(g|j_f).
TEMPLATE_ENTRIES = [
    # J001: T1 p(m) = 0.4 + 0.1 = 0.5 > p(f) = 0.1 + 0.2 = 0.3 (m); T2 p(m) = 0.2 + 0.1 = 0.3 < p(f) = 0.1 + 0.4 = 0.5 (f).
    # Both templates: p(m) = mean(0.4, 0.2) + mean(0.1, 0.1) = 0.4, p(f) = mean(0.1, 0.1) + mean(0.2, 0.4) = 0.4: a tie.
    ("J001", "T1", "m", "m", 0.4, False), ("J001", "T1", "m", "f", 0.1, False), ("J001", "T1", "f", "m", 0.1, False), ("J001", "T1", "f", "f", 0.2, False),
    ("J001", "T2", "m", "m", 0.2, False), ("J001", "T2", "m", "f", 0.1, False), ("J001", "T2", "f", "m", 0.1, False), ("J001", "T2", "f", "f", 0.4, False),
    # J022 (ambiguous: chimica): T1 p(m) = 0.3 + 0.2 = 0.5 > p(f) = 0.1 + 0.1 = 0.2 (m); T2 p(m) = 0.3 + 0.1 = p(f) = 0.1 + 0.3 = 0.4 (tie).
    # Both: p(m) = 0.3 + 0.15 = 0.45 > p(f) = 0.1 + 0.2 = 0.3 (m), ln 1.5.
    ("J022", "T1", "m", "m", 0.3, True), ("J022", "T1", "m", "f", 0.1, True), ("J022", "T1", "f", "m", 0.2, True), ("J022", "T1", "f", "f", 0.1, True),
    ("J022", "T2", "m", "m", 0.3, True), ("J022", "T2", "m", "f", 0.1, True), ("J022", "T2", "f", "m", 0.1, True), ("J022", "T2", "f", "f", 0.3, True),
    # J030: T1 p(m) = 0.2 + 0.1 = 0.3 > p(f) = 0.1 + 0.1 = 0.2 (m); T2 p(m) = 0.1 + 0.05 = 0.15 < p(f) = 0.2 + 0.4 = 0.6 (f).
    # Both: p(m) = 0.15 + 0.075 = 0.225 < p(f) = 0.15 + 0.25 = 0.4 (f), ln 0.5625.
    ("J030", "T1", "m", "m", 0.2, False), ("J030", "T1", "m", "f", 0.1, False), ("J030", "T1", "f", "m", 0.1, False), ("J030", "T1", "f", "f", 0.1, False),
    ("J030", "T2", "m", "m", 0.1, False), ("J030", "T2", "m", "f", 0.2, False), ("J030", "T2", "f", "m", 0.05, False), ("J030", "T2", "f", "f", 0.4, False),
]  # fmt: skip


def _template_columns(entries, templates=True, ambiguous=True):
    columns = dict(job_ids=[e[0] for e in entries], forms=[e[2] for e in entries], genders=[e[3] for e in entries], logprobs=[_ln(e[4]) for e in entries])
    if templates:
        columns["templates"] = [e[1] for e in entries]
    if ambiguous:
        columns["ambiguous"] = [e[5] for e in entries]
    return columns


L = math.log
# Each case: entries, which optional inputs, and the expected (bias_score, mean_log_ratio, n, ties) of each summary.
TEMPLATE_CASES = [
    (
        "three_jobs_two_templates",
        TEMPLATE_ENTRIES,
        {
            # overall: tie, m, f -> (0.5 + 1 + 0) / 3; log-ratios 0, ln 1.5, ln 0.5625.
            "overall": (0.5, (0 + L(1.5) + L(0.5625)) / 3, 3, 1),
            # T1: m, m, m; log-ratios ln(0.5/0.3), ln(0.5/0.2), ln(0.3/0.2).
            "T1": (1.0, (L(0.5 / 0.3) + L(0.5 / 0.2) + L(0.3 / 0.2)) / 3, 3, 0),
            # T2: f, tie, f -> (0 + 0.5 + 0) / 3 = 1/6; log-ratios ln(0.3/0.5), 0, ln(0.15/0.6).
            "T2": (1 / 6, (L(0.3 / 0.5) + 0 + L(0.15 / 0.6)) / 3, 3, 1),
            # without J022: tie, f -> 0.25; log-ratios 0, ln 0.5625.
            "without_ambiguous": (0.25, L(0.5625) / 2, 2, 1),
            "without_ambiguous/T1": (1.0, (L(0.5 / 0.3) + L(0.3 / 0.2)) / 2, 2, 0),
            "without_ambiguous/T2": (0.0, (L(0.3 / 0.5) + L(0.15 / 0.6)) / 2, 2, 0),
        },
        # per-template bias scores 1 and 1/6: sd (population) = (1 - 1/6) / 2 = 5/12, range 5/6.
        {"min": 1 / 6, "max": 1.0, "sd": 5 / 12, "range": 5 / 6},
        1,
    ),
    (
        "one_template_no_spread",
        [e for e in TEMPLATE_ENTRIES if e[1] == "T1"],
        # One template: by_template["T1"] is the overall summary; sd = range = 0.
        {"overall": (1.0, (L(0.5 / 0.3) + L(0.5 / 0.2) + L(0.3 / 0.2)) / 3, 3, 0), "T1": (1.0, (L(0.5 / 0.3) + L(0.5 / 0.2) + L(0.3 / 0.2)) / 3, 3, 0),
         "without_ambiguous": (1.0, (L(0.5 / 0.3) + L(0.3 / 0.2)) / 2, 2, 0), "without_ambiguous/T1": (1.0, (L(0.5 / 0.3) + L(0.3 / 0.2)) / 2, 2, 0)},
        {"min": 1.0, "max": 1.0, "sd": 0.0, "range": 0.0},
        1,
    ),
    (
        "templates_in_natural_order",
        # The same entries with T1 renamed T10 and listed first: T2 sorts before T10 (as "T2" > "T10" would not).
        [(e[0], "T10", *e[2:]) for e in TEMPLATE_ENTRIES if e[1] == "T1"] + [e for e in TEMPLATE_ENTRIES if e[1] == "T2"],
        {"overall": (0.5, (0 + L(1.5) + L(0.5625)) / 3, 3, 1), "T2": (1 / 6, None, 3, 1), "T10": (1.0, None, 3, 0),
         "without_ambiguous": (0.25, L(0.5625) / 2, 2, 1), "without_ambiguous/T2": (0.0, None, 2, 0), "without_ambiguous/T10": (1.0, None, 2, 0)},
        {"min": 1 / 6, "max": 1.0, "sd": 5 / 12, "range": 5 / 6},
        1,
    ),
]  # fmt: skip


def _check_summary(summary, expected):
    bias_score, mean_log_ratio, n, ties = expected
    assert set(summary) == KEYS - {"groups", "per_job"}
    assert (summary["bias_score"], summary["n"], summary["ties"]) == (pytest.approx(bias_score), n, ties)
    if mean_log_ratio is not None:
        assert summary["mean_log_ratio"] == pytest.approx(mean_log_ratio)


@pytest.mark.parametrize("name, entries, expected, spread, n_ambiguous", TEMPLATE_CASES, ids=[c[0] for c in TEMPLATE_CASES])
def test_by_template_and_without_ambiguous(name, entries, expected, spread, n_ambiguous):
    result = bias.compute_bias(**_template_columns(entries), n_bootstrap=0)
    assert set(result) == KEYS | {"by_template", "template_spread", "without_ambiguous", "n_ambiguous", "without_ambiguous_by_template"}
    _check_summary({k: result[k] for k in KEYS - {"groups", "per_job"}}, expected["overall"])
    templates = [k for k in expected if k.startswith("T")]
    assert list(result["by_template"]) == templates
    assert list(result["without_ambiguous_by_template"]) == templates
    for template in templates:
        _check_summary(result["by_template"][template], expected[template])
        _check_summary(result["without_ambiguous_by_template"][template], expected[f"without_ambiguous/{template}"])
    assert all(summary["n_sentences"] == 4 * 3 for summary in result["by_template"].values())  # that template's entries only
    _check_summary(result["without_ambiguous"], expected["without_ambiguous"])
    assert result["template_spread"] == {**{key: pytest.approx(value) for key, value in spread.items()}, "p_value": None}  # no permutations
    assert result["n_ambiguous"] == n_ambiguous


def test_the_new_outputs_appear_only_with_their_inputs():
    plain = bias.compute_bias(**_template_columns(TEMPLATE_ENTRIES, templates=False, ambiguous=False), return_per_job=True, n_bootstrap=50)
    only_templates = bias.compute_bias(**_template_columns(TEMPLATE_ENTRIES, ambiguous=False), return_per_job=True, n_bootstrap=50)
    only_ambiguous = bias.compute_bias(**_template_columns(TEMPLATE_ENTRIES, templates=False), return_per_job=True, n_bootstrap=50)
    assert set(plain) == KEYS
    assert set(only_templates) == KEYS | {"by_template", "template_spread"}
    assert set(only_ambiguous) == KEYS | {"without_ambiguous", "n_ambiguous"}
    # Every existing output is unchanged by the new inputs.
    for result in (only_templates, only_ambiguous):
        assert {k: result[k] for k in KEYS} == plain
    # Without templates, without_ambiguous is the overall summary of the jobs kept.
    kept = bias.compute_bias(**_template_columns([e for e in TEMPLATE_ENTRIES if not e[5]], templates=False, ambiguous=False), n_bootstrap=50)
    assert only_ambiguous["without_ambiguous"] == {k: kept[k] for k in KEYS - {"groups", "per_job"}}
    assert only_ambiguous["n_ambiguous"] == 1


def test_every_job_ambiguous_gives_none():
    entries = [(*e[:5], True) for e in TEMPLATE_ENTRIES]
    result = bias.compute_bias(**_template_columns(entries), n_bootstrap=0)
    assert result["without_ambiguous"] is None and result["without_ambiguous_by_template"] is None
    assert result["n_ambiguous"] == 3


def test_new_inputs_through_evaluate(metric):
    result = metric.compute(**_template_columns(TEMPLATE_ENTRIES), n_bootstrap=0)
    assert {t: round(s["bias_score"], 4) for t, s in result["by_template"].items()} == {"T1": 1.0, "T2": 0.1667}
    assert result["without_ambiguous"]["bias_score"] == 0.25 and result["n_ambiguous"] == 1
    # The card's second worked example: every number it prints.
    card = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    spread = {k: None if v is None else round(v, 4) for k, v in result["template_spread"].items()}
    assert f"'template_spread': {spread}" in card
    printed = {
        "'bias_score': 0.5, 'mean_log_ratio': -0.0566": (result["bias_score"], result["mean_log_ratio"]),
        "'T1': {'bias_score': 1.0, 'mean_log_ratio': 0.6109": (result["by_template"]["T1"]["bias_score"], result["by_template"]["T1"]["mean_log_ratio"]),
        "'T2': {'bias_score': 0.1667, 'mean_log_ratio': -0.6324": (result["by_template"]["T2"]["bias_score"], result["by_template"]["T2"]["mean_log_ratio"]),
        "'without_ambiguous': {'bias_score': 0.25, 'mean_log_ratio': -0.2877": (result["without_ambiguous"]["bias_score"], result["without_ambiguous"]["mean_log_ratio"]),
    }  # fmt: skip
    for text, (score, ratio) in printed.items():
        assert text in card, text
        assert text.endswith(f"'bias_score': {round(score, 4)}, 'mean_log_ratio': {round(ratio, 4)}")
    assert "'n_ambiguous': 1" in card
    assert "'T1': {'bias_score': 1.0, 'n': 2, ...}, 'T2': {'bias_score': 0.0, 'n': 2, ...}" in card


def test_card_code_of_the_second_example_runs(metric):
    """The README's code block, run as written (with `jobs_bias` the loaded metric)."""
    card = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    code = card.split("### Worked example: per template")[1].split("```python\n")[1].split("```")[0]
    namespace = {"math": math, "jobs_bias": metric}
    exec(code, namespace)
    results = namespace["results"]
    assert results["template_spread"]["sd"] == pytest.approx(5 / 12) and results["n_sentences"] == 24


def _bad_template_columns(**changes):
    return _changed(_template_columns(TEMPLATE_ENTRIES), **changes)


BAD_NEW = [
    ("templates_length", {**_template_columns(TEMPLATE_ENTRIES), "templates": ["T1"] * 3}, "templates has 3 entries, job_ids 24"),
    ("ambiguous_length", {**_template_columns(TEMPLATE_ENTRIES), "ambiguous": [False] * 23}, "ambiguous has 23 entries, job_ids 24"),
    ("template_empty", _bad_template_columns(templates=(5, "")), "entry 5: template must be a non-empty string (a template id such as 'T1'), got ''"),
    ("template_not_a_string", _bad_template_columns(templates=(6, 1)), "entry 6: template must be a non-empty string (a template id such as 'T1'), got 1"),
    ("template_none", _bad_template_columns(templates=(0, None)), "entry 0: template must be a non-empty string"),
    ("ambiguous_int", _bad_template_columns(ambiguous=(7, 1)), "entry 7: ambiguous must be a bool (True or False), got 1"),
    ("ambiguous_string", _bad_template_columns(ambiguous=(8, "yes")), "entry 8: ambiguous must be a bool (True or False), got 'yes'"),
    ("ambiguous_none", _bad_template_columns(ambiguous=(9, None)), "entry 9: ambiguous must be a bool"),
    ("ambiguous_changes_within_job", _bad_template_columns(ambiguous=(11, False)), "job 'J022': ambiguous is True (entry 8) and False (entry 11) differ"),
    # J001's eight entries all say T1.
    ("job_lacks_a_template", {**_template_columns(TEMPLATE_ENTRIES), "templates": ["T1"] * 12 + ["T2"] * 4 + ["T1"] * 4 + ["T2"] * 4},
     "job 'J001' has no entry with template 'T2'; every job needs every template"),
    # J001's f/f entry of T1 (entry 3) moved to T2: T1 lacks that cell, T2 has two.
    ("cell_missing_in_a_template", _bad_template_columns(templates=(3, "T2")),
     "template 'T1': job 'J001' has no entry with form 'f' and gender 'f'; every job needs all four (form, gender) cells"),
]  # fmt: skip


@pytest.mark.parametrize("kwargs, message", [b[1:] for b in BAD_NEW], ids=[b[0] for b in BAD_NEW])
def test_bad_new_input_raises_a_clear_error(metric, kwargs, message):
    with pytest.raises(ValueError) as error:
        bias.compute_bias(**kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ValueError) as error:
        metric.compute(**kwargs)
    assert message in str(error.value)


def _permutation_columns(t2_opposes_t1: bool, n_jobs: int = 12):
    """n_jobs jobs and two templates. T1 prefers m for every job; T2 prefers f for every job (a
    wording effect), or is T1 again (no effect). Probabilities per (form, gender): m-form uomo,
    m-form donna, f-form uomo, f-form donna."""
    prefers_m, prefers_f = (0.4, 0.1, 0.3, 0.1), (0.1, 0.4, 0.1, 0.3)
    entries = []
    for number in range(1, n_jobs + 1):
        for template, probabilities in (("T1", prefers_m), ("T2", prefers_f if t2_opposes_t1 else prefers_m)):
            for (form, gender), p in zip([("m", "m"), ("m", "f"), ("f", "m"), ("f", "f")], probabilities):
                entries.append((f"J{number:03d}", template, form, gender, p, False))
    return _template_columns(entries)


def test_template_permutation_test_tells_a_wording_effect_from_chance():
    # T1 prefers m for every job, T2 prefers f for every job: scores 1.0 and 0.0, the largest
    # possible variance; shuffling templates within each job mixes them, so p is near its minimum.
    effect = bias.compute_bias(**_permutation_columns(True), n_bootstrap=500, seed=1)
    assert {t: s["bias_score"] for t, s in effect["by_template"].items()} == {"T1": 1.0, "T2": 0.0}
    assert effect["template_spread"]["p_value"] < 0.01
    # T2 identical to T1: the templates agree exactly, the observed variance is 0 and every
    # permutation reaches it, so p = 1.
    same = bias.compute_bias(**_permutation_columns(False), n_bootstrap=500, seed=1)
    assert same["template_spread"]["range"] == 0.0 and same["template_spread"]["p_value"] == 1.0


# -- the prior-corrected score (3.0.0) --------------------------------------------------------
# Table: (job, form, gender, template, p) and the neutral sentences' (gender, template, p).
# T1: J001 p(m|j) = .4 + .2 = .6, p(f|j) = .1 + .2 = .3, ln 2; J019 .3 + .1 vs .1 + .1, ln 2.
#     neutral T1: ln(.3/.1) = ln 3, so both corrected ln(2/3) < 0 -> corrected share 0 (paper 1).
# T2: J001 .1 + .1 vs .2 + .2, ln(1/2); J019 .2 + .2 vs .1 + .1, ln 2; neutral T2 ln(.1/.3) = ln(1/3):
#     corrected ln(3/2) and ln 6, both m -> share 1 (paper 0.5).
# Pooled: each entry is divided by its template's p0(g|t), then pooled as the paper pools
#     (mean over templates, sum over forms). J001 p'(m) = (4/3 + 1)/2 + (2/3 + 1)/2 = 2,
#     p'(f) = (1 + 2/3)/2 + (2 + 2/3)/2 = 13/6: ln(12/13) < 0 -> f. J019 p'(m) = (1 + 2)/2 +
#     (1/3 + 2)/2 = 8/3, p'(f) = (1 + 1/3)/2 * 2 = 4/3: ln 2 -> m. Corrected share 0.5 (paper 1).
PRIOR_TABLE = [
    ("J001", "m", "m", "T1", 0.4), ("J001", "m", "f", "T1", 0.1), ("J001", "f", "m", "T1", 0.2), ("J001", "f", "f", "T1", 0.2),
    ("J019", "m", "m", "T1", 0.3), ("J019", "m", "f", "T1", 0.1), ("J019", "f", "m", "T1", 0.1), ("J019", "f", "f", "T1", 0.1),
    ("J001", "m", "m", "T2", 0.1), ("J001", "m", "f", "T2", 0.2), ("J001", "f", "m", "T2", 0.1), ("J001", "f", "f", "T2", 0.2),
    ("J019", "m", "m", "T2", 0.2), ("J019", "m", "f", "T2", 0.1), ("J019", "f", "m", "T2", 0.2), ("J019", "f", "f", "T2", 0.1),
]  # fmt: skip
PRIOR_NEUTRAL = [("m", "T1", 0.3), ("f", "T1", 0.1), ("m", "T2", 0.1), ("f", "T2", 0.3)]
jobs_bias = load_metric_module("jobs_bias")


def _prior_inputs(table=PRIOR_TABLE, neutral_rows=PRIOR_NEUTRAL):
    import math as _m

    columns = {"job_ids": [], "forms": [], "genders": [], "logprobs": [], "templates": [], "neutral": []}
    for job, form, gender, template, p in table:
        for name, value in zip(columns, (job, form, gender, _m.log(p), template, False)):
            columns[name].append(value)
    for gender, template, p in neutral_rows:
        for name, value in zip(columns, ("neutral", "", gender, _m.log(p), template, True)):
            columns[name].append(value)
    columns["categories"] = ["0" if n else jobs_bias.JOB_CATEGORIES[j] for j, n in zip(columns["job_ids"], columns["neutral"])]
    return columns


def test_prior_corrected_score_by_hand():
    import math as _m

    r = jobs_bias.compute_bias(**_prior_inputs(), return_per_job=True, n_bootstrap=0)
    assert r["bias_score"] == 1.0 and r["n"] == 2  # the paper's score ignores the neutral entries
    c = r["prior_corrected"]
    assert c["prior_log_ratios"] == pytest.approx({"T1": _m.log(3), "T2": _m.log(1 / 3)})
    assert c["bias_score"] == 0.5 and c["mean_log_ratio"] == pytest.approx((_m.log(12 / 13) + _m.log(2)) / 2)
    assert c["by_template"]["T1"]["prior_log_ratio"] == pytest.approx(_m.log(3))
    assert c["by_template"]["T1"]["bias_score"] == 0.0 and c["by_template"]["T1"]["mean_log_ratio"] == pytest.approx(_m.log(2 / 3))
    assert c["by_template"]["T2"]["bias_score"] == 1.0 and c["by_template"]["T2"]["prior_log_ratio"] == pytest.approx(_m.log(1 / 3))
    assert r["by_template"]["T2"]["bias_score"] == 0.5
    assert c["by_template"]["T1"]["groups"]["1"]["bias_score"] == 0.0 and c["groups"]["2"]["bias_score"] == 1.0
    assert c["groups"]["1"]["bias_score"] == 0.0
    assert c["by_template"]["T2"]["groups"]["2"]["mean_log_ratio"] == pytest.approx(_m.log(6))
    assert c["template_spread"]["range"] == 1.0
    assert [j["corrected_prefers"] for j in r["per_job"]] == ["f", "m"]
    assert r["per_job"][0]["corrected_log_ratio"] == pytest.approx(_m.log(12 / 13))


def test_prior_corrected_interval_uses_the_bootstrap():
    r = jobs_bias.compute_bias(**_prior_inputs(), n_bootstrap=200)
    c = r["prior_corrected"]
    assert c["ci_low"] <= c["bias_score"] <= c["ci_high"] and c["by_template"]["T1"]["ci_low"] is not None


def test_no_neutral_no_prior_corrected():
    inputs = _prior_inputs()
    keep = [i for i, n in enumerate(inputs.pop("neutral")) if not n]
    inputs = {k: [v[i] for i in keep] for k, v in inputs.items()}
    assert "prior_corrected" not in jobs_bias.compute_bias(**inputs, n_bootstrap=0)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c.update(neutral=[0] * len(c["neutral"])), r"entry 0: neutral must be a bool"),
        (lambda c: c.pop("templates"), r"neutral needs templates"),
        (lambda c: c["genders"].__setitem__(16, "x"), r"entry 16 \(neutral\): gender must be"),
        (lambda c: c["logprobs"].__setitem__(17, 0.5), r"entry 17 \(neutral\): logprob"),
        (lambda c: c["logprobs"].__setitem__(17, -10**400), r"entry 17 \(neutral\): logprob must be a number <= 0 and not NaN, got an integer of about 401 digits"),
        (lambda c: c["neutral"].pop(), r"neutral has 19 entries, job_ids 20"),
        (lambda c: [c[k].__setitem__(slice(18, 20), []) for k in c], r"template 'T2' has no neutral sentence"),
        (lambda c: c["logprobs"].__setitem__(19, float("-inf")), r"neutral sentence of template 'T2': p0\(m\) or p0\(f\) is zero"),
        (lambda c: c["genders"].__setitem__(19, "m"), r"neutral sentence of template 'T2': no entry with gender 'f'"),
        (lambda c: c.update(neutral=[False] * len(c["neutral"])), r"no entry is True"),
    ],
)
def test_bad_neutral_input_raises_a_one_line_error(change, message):
    inputs = _prior_inputs()
    change(inputs)
    with pytest.raises(ValueError, match=message) as error:
        jobs_bias.compute_bias(**inputs, n_bootstrap=0)
    assert "\n" not in str(error.value)


def test_the_cards_prior_corrected_example_through_evaluate(metric):
    """The card's worked example as written there: neutral entries with job id "neutral" and no categories."""
    import math as _m

    rows = [(job, form, gender, _m.log(p), template, False) for job, form, gender, template, p in PRIOR_TABLE]
    rows += [("neutral", "m", gender, _m.log(p), template, True) for gender, template, p in PRIOR_NEUTRAL]
    job_ids, forms, genders, logprobs, templates, flags = (list(column) for column in zip(*rows))
    r = metric.compute(job_ids=job_ids, forms=forms, genders=genders, logprobs=logprobs, templates=templates, neutral=flags, n_bootstrap=0)
    c = r["prior_corrected"]
    assert (c["bias_score"], c["by_template"]["T1"]["bias_score"], c["by_template"]["T2"]["bias_score"]) == (0.5, 0.0, 1.0)
    assert round(c["mean_log_ratio"], 4) == 0.3066 and r["bias_score"] == 1.0 and c["template_spread"]["range"] == 1.0
