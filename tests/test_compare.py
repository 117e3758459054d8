"""Paired comparison of two models: hand-computed scores, intervals, p-values, Holm, letter groups."""

import json

import pytest
from equita.runners.results.compare import holm, indistinguishable_groups, paired_difference


def rows(values, den=1.0):
    """One row per unit: row id "r<i>", unit "u<i>", numerator values[i]."""
    return {f"r{i}": (f"u{i}", float(value), den) for i, value in enumerate(values)}


def test_identical_models_do_not_differ():
    a = rows([1, -1, 0, 1, 1, -1, 0])
    result = paired_difference(a, dict(a), n_resamples=200)
    # Every resample and every swap gives A - B = 0: the interval is the point, p is 1.
    assert result["difference"] == 0.0
    assert (result["ci_low"], result["ci_high"]) == (0.0, 0.0)
    assert result["p_value"] == 1.0
    json.dumps(result)


def test_shift_on_every_unit():
    # A cycles 0..4 over 30 units, B = A - 1 on each: A - B = 30/30 = 1 in every resample.
    a = rows([i % 5 for i in range(30)])
    b = rows([i % 5 - 1 for i in range(30)])
    result = paired_difference(a, b, n_resamples=999)
    assert result["difference"] == pytest.approx(1.0, abs=1e-12)
    assert result["ci_low"] == pytest.approx(1.0, abs=1e-12) and result["ci_high"] == pytest.approx(1.0, abs=1e-12)
    # Only the unswapped and all-swapped patterns are as extreme (2 of 2**30): p ~ 2 * 1/1000.
    assert result["p_value"] < 0.01
    assert "999 resamples" in result["method"] and "30 units" in result["method"]


def test_ratio_with_unequal_denominators():
    # u1 has two rows per model; units have denominators 4, 2, 4.
    a = {"x1": ("u1", 2, 2), "x2": ("u1", 1, 2), "y": ("u2", 1, 2), "z": ("u3", 2, 4)}
    b = {"x1": ("u1", 1, 2), "x2": ("u1", 1, 2), "y": ("u2", 2, 2), "z": ("u3", 0, 4)}
    result = paired_difference(a, b, multiplier=100, n_resamples=50)
    # A: (3 + 1 + 2) / (4 + 2 + 4) = 0.6 -> 60; B: (2 + 2 + 0) / 10 = 0.4 -> 40.
    assert (result["n_rows"], result["n_units"]) == (4, 3)
    assert result["score_a"] == pytest.approx(60.0)
    assert result["score_b"] == pytest.approx(40.0)
    assert result["difference"] == pytest.approx(20.0)
    assert "distance_difference" not in result


def test_only_shared_rows_are_scored():
    a = {"r1": ("u1", 1, 1), "r2": ("u2", 1, 1), "r3": ("u3", 0, 1), "onlyA": ("u4", 1, 1)}
    b = {"r1": ("u1", 0, 1), "r2": ("u2", 1, 1), "r3": ("u3", 0, 1), "onlyB1": ("u5", 1, 1), "onlyB2": ("u1", 1, 1)}
    result = paired_difference(a, b, n_resamples=50)
    # Shared r1..r3: A = 2/3, B = 1/3 (onlyA would make A 3/4, onlyB2 would make B 2/4).
    assert (result["n_rows"], result["n_units"], result["only_a"], result["only_b"]) == (3, 3, 1, 2)
    assert result["score_a"] == pytest.approx(2 / 3)
    assert result["score_b"] == pytest.approx(1 / 3)


def test_unit_key_must_agree():
    a = {"r1": ("u1", 1, 1), "row-7": ("u2", 1, 1)}
    b = {"r1": ("u1", 1, 1), "row-7": ("u9", 1, 1)}
    with pytest.raises(ValueError, match="row-7"):
        paired_difference(a, b)


def test_distance_from_unbiased_ranks_bias_scores():
    # 10 units: A has three -1 rows (-3/10 = -0.3), B one +1 row (+1/10 = +0.1).
    a = rows([-1, -1, -1] + [0] * 7)
    b = rows([1] + [0] * 9)
    result = paired_difference(a, b, unbiased=0.0, n_resamples=200)
    assert result["score_a"] == pytest.approx(-0.3) and result["score_b"] == pytest.approx(0.1)
    assert result["difference"] == pytest.approx(-0.4)
    # |−0.3| − |0.1| = +0.2: B is closer to unbiased although A is lower.
    assert result["distance_difference"] == pytest.approx(0.2)
    assert result["distance_ci_low"] <= 0.2 <= result["distance_ci_high"]
    assert 0 < result["distance_p_value"] <= 1


def test_exact_permutation_p_counted_by_hand():
    # Per-unit A - B = 2, 1, 1 (denominators 1): stat = (±2 ± 1 ± 1) / 3 over 8 sign patterns:
    # sums 4, 2, 2, 0, 0, -2, -2, -4; |sum| >= 4 in 2 of 8 -> p = 0.25.
    result = paired_difference(rows([2, 1, 1]), rows([0, 0, 0]), n_resamples=100)
    assert result["difference"] == pytest.approx(4 / 3)
    assert result["p_value"] == pytest.approx(0.25)
    assert "exact, 8 patterns" in result["method"]


@pytest.mark.parametrize(
    "a, b, expected",
    [
        # No shared unit: scores are 0/0 = 0.0, nothing to test.
        ({"r1": ("u1", 1, 1)}, {"r2": ("u2", 1, 1)}, {"n_units": 0, "score_a": 0.0, "ci_low": None, "p_value": None}),
        # One unit: no interval; its two swap patterns are both as extreme -> p = 1.
        ({"r1": ("u1", 1, 1)}, {"r1": ("u1", 0, 1)}, {"n_units": 1, "difference": 1.0, "ci_low": None, "p_value": 1.0}),
        # Summed denominators of 0 score 0.0, not NaN.
        (rows([1, 2], den=0.0), rows([0, 1], den=0.0), {"score_a": 0.0, "difference": 0.0, "ci_low": 0.0, "ci_high": 0.0}),
    ],
)
def test_edge_cases(a, b, expected):
    result = paired_difference(a, b, n_resamples=50)
    assert {key: result[key] for key in expected} == expected


def test_same_seed_same_result():
    a, b = rows([1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0]), rows([0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0])
    first = paired_difference(a, b, unbiased=0.5, n_resamples=300, seed=3)
    assert paired_difference(a, b, unbiased=0.5, n_resamples=300, seed=3) == first
    assert first["ci_low"] < first["difference"] < first["ci_high"]


@pytest.mark.parametrize(
    "p_values, expected",
    [
        # Sorted 0.01, 0.03, 0.04 times 3, 2, 1: 0.03, 0.06, 0.04 -> running max 0.03, 0.06, 0.06.
        (
            {("m1", "m2"): 0.01, ("m1", "m3"): 0.04, ("m2", "m3"): 0.03, ("m3", "m4"): None},
            {("m1", "m2"): 0.03, ("m1", "m3"): 0.06, ("m2", "m3"): 0.06, ("m3", "m4"): None},
        ),
        # 0.6 * 2 = 1.2 capped at 1; 0.7 * 1 = 0.7 lifted to the running max 1.
        ({"x": 0.7, "y": 0.6}, {"x": 1.0, "y": 1.0}),
        ({"only": None}, {"only": None}),
    ],
)
def test_holm(p_values, expected):
    adjusted = holm(p_values)
    assert list(adjusted) == list(expected)
    assert adjusted == pytest.approx(expected)


@pytest.mark.parametrize(
    "differing, expected",
    [
        # m1 vs m3 only: runs m1..m2 (a) and m2..m3 (b); m3 alone is inside b.
        ({("m1", "m3")}, {"m1": "a", "m2": "ab", "m3": "b"}),
        ({("m1", "m2"), ("m1", "m3"), ("m2", "m3")}, {"m1": "a", "m2": "b", "m3": "c"}),
        (set(), {"m1": "a", "m2": "a", "m3": "a"}),
        # m1-m3 and m2-m4 differ: runs m1..m2 (a), m2..m3 (b), m3..m4 (c).
        ({("m1", "m3"), ("m1", "m4"), ("m2", "m4")}, {"m1": "a", "m2": "ab", "m3": "bc", "m4": "c"}),
    ],
)
def test_indistinguishable_groups(differing, expected):
    pairs = {frozenset(pair) for pair in differing}
    ranked = sorted(expected)
    assert indistinguishable_groups(ranked, lambda x, y: frozenset((x, y)) in pairs) == expected
