"""Paired statistics for comparing two models scored on the same rows of a dataset.

Every headline metric is a ratio over units (multiplier * sum of numerators / sum of
denominators), so the comparison works on per-unit sums of the rows both models answered:
- the difference of the two scores, with a percentile interval from a paired bootstrap over
  units (whole units are drawn, as in the single-model intervals, and each draw takes A's and
  B's values of the same units, so what the models share cancels out);
- a two-sided paired permutation test over units (within a unit, A's and B's values are swapped
  at random), exact when the sign patterns are few enough to enumerate;
- the same for the distance from the unbiased value, which is what ranks bias scores;
- Holm's step-down adjustment for the many pairs of a leaderboard, and a compact letter display
  of the models that cannot be told apart.
"""

import math
import string
import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats

Rows = dict[str, tuple[str, float, float]]


def _ratio(num, den, axis=-1):
    total = np.sum(den, axis=axis)
    # A statistic over no counted rows is 0.0, as in the metrics, so no resample turns into NaN.
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total != 0, np.sum(num, axis=axis) / np.where(total != 0, total, 1), 0.0)


def _statistics(multiplier, unbiased):
    def difference(num_a, den_a, num_b, den_b, axis=-1):
        return multiplier * (_ratio(num_a, den_a, axis) - _ratio(num_b, den_b, axis))

    def distance(num_a, den_a, num_b, den_b, axis=-1):
        score_a, score_b = multiplier * _ratio(num_a, den_a, axis), multiplier * _ratio(num_b, den_b, axis)
        return np.abs(score_a - unbiased) - np.abs(score_b - unbiased)

    return {"": difference} if unbiased is None else {"": difference, "distance_": distance}


def _batch(n_units):
    # Resamples are n_resamples x n_units arrays; batches keep each under a few million cells.
    return max(1, 2_000_000 // max(n_units, 1))


def _interval(units, statistic, observed, confidence, n_resamples, seed):
    if len(units[0]) < 2:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            result = stats.bootstrap(units, statistic, paired=True, vectorized=True, method="percentile",
                                     confidence_level=confidence, n_resamples=n_resamples, batch=_batch(len(units[0])),
                                     random_state=np.random.default_rng(seed))  # fmt: skip
        except ValueError:
            return None, None
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if math.isnan(low) or math.isnan(high):
        # scipy gives NaN where every resample is the same value; that value is the interval.
        distribution = result.bootstrap_distribution
        if np.all(distribution == distribution[0]):
            return observed, observed
        return None, None
    return low, high


def _p_value(units, statistic, n_resamples, seed):
    n = len(units[0])
    if n == 0:
        return None
    if n == 1:
        # Two patterns, the observed one and its negation: both are as extreme, so p is 1 (scipy refuses n < 2).
        return 1.0
    # Permuting indices into one table of A's then B's units swaps whole (num, den) pairs together.
    num, den = np.concatenate([units[0], units[2]]), np.concatenate([units[1], units[3]])

    def swapped(x, y, axis=-1):
        return statistic(num[x], den[x], num[y], den[y], axis=axis)

    result = stats.permutation_test((np.arange(n), np.arange(n) + n), swapped, permutation_type="samples",
                                    vectorized=True, n_resamples=n_resamples, alternative="two-sided",
                                    batch=_batch(n), random_state=np.random.default_rng(seed))  # fmt: skip
    return float(result.pvalue)


def _unit_sums(shared: list[str], unit_of: Rows, *sides: Rows) -> tuple[np.ndarray, ...]:
    """Per unit (in the order first met), the summed numerators and denominators of the shared rows, side after side."""
    keys = {key: index for index, key in enumerate(dict.fromkeys(unit_of[row][0] for row in shared))}
    where = np.array([keys[unit_of[row][0]] for row in shared], dtype=int)
    return tuple(np.bincount(where, weights=np.array([float(rows[row][column]) for row in shared]), minlength=len(keys))
                 for rows in sides for column in (1, 2))  # fmt: skip


def ratio_interval(rows: Rows, *, multiplier: float = 1.0, confidence: float = 0.95, n_resamples: int = 2000,
                   seed: int = 0) -> tuple[float, float | None, float | None]:  # fmt: skip
    """One model's score and its percentile bootstrap interval over units, for a metric that reports no interval."""
    units = _unit_sums(list(rows), rows, rows)

    def score(num, den, axis=-1):
        return multiplier * _ratio(num, den, axis)

    observed = float(score(*units))
    return (observed, *_interval(units, score, observed, confidence, n_resamples, seed))


def paired_difference(a: Rows, b: Rows, *, multiplier: float = 1.0, unbiased: float | None = None,
                      confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> dict:  # fmt: skip
    """Score difference A - B over the rows both models have, with a paired interval and p-value.

    `a` and `b` map a row id to (unit key, numerator, denominator). Rows only one side has are
    counted (only_a, only_b) and left out. With `unbiased`, the same for |score - unbiased|:
    a negative distance_difference means A is closer to unbiased.
    """
    shared = [row for row in a if row in b]
    for row in shared:
        if a[row][0] != b[row][0]:
            raise ValueError(f"row {row!r} is in unit {a[row][0]!r} for model A but in {b[row][0]!r} for model B")
    units = _unit_sums(shared, a, a, b)
    n = len(units[0])
    score_a = float(multiplier * _ratio(units[0], units[1]))
    score_b = float(multiplier * _ratio(units[2], units[3]))
    out = {"n_rows": len(shared), "n_units": n, "only_a": sum(row not in b for row in a),
           "only_b": sum(row not in a for row in b), "score_a": score_a, "score_b": score_b}  # fmt: skip
    for prefix, statistic in _statistics(multiplier, unbiased).items():
        observed = float(statistic(*units))
        low, high = _interval(units, statistic, observed, confidence, n_resamples, seed)
        out.update({f"{prefix}difference": observed, f"{prefix}ci_low": low, f"{prefix}ci_high": high,
                    f"{prefix}p_value": _p_value(units, statistic, n_resamples, seed)})  # fmt: skip
    bootstrap = f"percentile, {confidence:.0%}, {n_resamples} resamples" if n >= 2 else "no interval under 2 units"
    permutation = f"exact, {2**n} patterns" if 2**n <= n_resamples else f"{n_resamples} resamples"
    out["method"] = f"paired bootstrap over {n} units ({bootstrap}), paired permutation test ({permutation})"
    return out


def holm(p_values: dict, alpha: float = 0.05) -> dict:
    """Holm-Bonferroni adjusted p-values, same keys; None is no test and stays None.

    The adjusted values do not depend on `alpha`: a pair differs at level alpha when its
    adjusted p-value is <= alpha, which is Holm's step-down procedure at that level.
    """
    tested = sorted((p, index) for index, p in enumerate(p_values.values()) if p is not None)
    keys, m = list(p_values), len(tested)
    adjusted, running = dict.fromkeys(p_values), 0.0
    for rank, (p, index) in enumerate(tested):
        # The running max keeps the step-down order: a smaller p never gets a larger adjusted one.
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[keys[index]] = running
    return adjusted


def indistinguishable_groups(ranked: list[str], differ: Callable[[str, str], bool]) -> dict[str, str]:
    """Compact letter display: models sharing a letter cannot be told apart.

    From each position, the longest run of consecutive models (in rank order) with no pair that
    differs; runs inside an earlier one are dropped, the rest get letters a, b, c, ... in order.
    """
    runs, last_end = [], -1
    for start in range(len(ranked)):
        end = start
        while end + 1 < len(ranked) and not any(differ(ranked[k], ranked[end + 1]) for k in range(start, end + 1)):
            end += 1
        if end > last_end:
            runs.append((start, end))
            last_end = end
    letters = {model: "" for model in ranked}
    for index, (start, end) in enumerate(runs):
        for model in ranked[start : end + 1]:
            letters[model] += _letter(index)
    return letters


def _letter(index):
    # Runs are concatenated per model, so every label must be one character (or bracketed) to read back.
    return string.ascii_letters[index] if index < len(string.ascii_letters) else f"[{index + 1}]"
