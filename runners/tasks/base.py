"""What a benchmark declares: its runner tasks (`EvalTask`) and how their results read (`Presentation`).

Each benchmark declares both once, in its own file next to this one; the runner, the report, the
comparison, the CLI summary, `equita verify` and the leaderboard read nothing else about it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...builders.spec import TaskSpec
from ..requests import Request

# A task's samples -> {row id: (unit, numerator, denominator)}: its headline is
# multiplier * sum(numerators) / sum(denominators) over units, and its interval resamples units.
Units = Callable[[list[dict]], dict[str, tuple[str, float, float]]]
Figure = tuple[str, Callable[[dict, str, Path], None]]  # (file suffix, draw(result, title, path))


@dataclass(frozen=True)
class Presentation:
    """How one metric's results read: what ranks models, what is unbiased, what a report shows."""

    headline: str  # the key of the task's results that ranks models
    label: str  # its name in tables ("bias score", "CWA")
    scale: tuple[float, float]  # the range the headline lies in
    better: str  # "closer" (to `unbiased`: bias scores) or "higher" (accuracies, F1)
    axis: str  # the axis label of a plot of the headline
    unbiased: float | None = None  # the value of a model without bias (0 for ItaP-AT, 0.5 for Jobs); None for accuracies
    interval: bool = True  # whether the results carry ci_low / ci_high around the headline
    units: Units | None = None  # how the headline decomposes over rows, for paired comparisons
    multiplier: float = 1.0
    groups: str = ""  # what the per-group results (results["groups"]) are, e.g. "subdataset"; "" when none
    group_order: tuple[str, ...] = ()  # the order groups are listed in (the dataset's config order)
    error_rate: str | None = None  # the key of the share of answers that could not be read
    details: tuple[tuple[str, str], ...] = ()  # (key, label) of the other values a reader compares across models
    table: Callable[[dict], str] | None = None  # the report's table of one model's result
    figures: tuple[Figure, ...] = ()  # the report's figures of one model's result
    notes: str = ""  # one sentence a reader needs to read the headline

    def __post_init__(self):
        if self.better not in ("closer", "higher"):
            raise ValueError(f"Presentation.better {self.better!r}: 'closer' or 'higher'")
        if (self.better == "closer") != (self.unbiased is not None):
            raise ValueError("Presentation: 'closer' needs an unbiased value, and only 'closer' has one")

    def distance(self, value: float) -> float:
        """What ranks a model, smaller first: the distance from the unbiased value, or minus the score."""
        return abs(value - self.unbiased) if self.better == "closer" else -value


@dataclass(frozen=True)
class EvalTask:
    name: str  # what users pass to --tasks
    description: str
    dataset: TaskSpec  # the built dataset it reads
    config: str
    request: Callable[[dict], Request]  # one dataset row -> one request
    metric: str  # metrics/<metric>/, loaded with evaluate.load
    metric_inputs: Callable[[list[dict], list[dict]], dict]  # (rows, responses) -> compute() keyword arguments
    per_row: Callable[[dict, list[dict], list[dict]], list[dict]]  # (metric output, rows, responses) -> one dict per row for samples.jsonl
    presentation: Presentation
    per_row_keys: tuple[str, ...] = ()  # keys of the metric output that are per-row lists, kept out of results.json
    split: str = "test"
    metric_options: dict = field(default_factory=dict)  # fixed compute() options, recorded in results.json
    entries: Callable[[dict], int] = lambda row: 1  # metric-input entries a row contributes (Jobs: one per continuation)
    limit_by: str | None = None  # --limit counts distinct values of this column (whole units), not rows
    limit_keeps: Callable[[dict], bool] = lambda row: False  # rows every --limit keeps, outside its count (Jobs: the neutral sentences)


def logsumexp(values: list[float]) -> float:
    top = max(values)
    return top if math.isinf(top) else top + math.log(sum(math.exp(v - top) for v in values))


def row_units(numerator: str, denominator: str | None = None, unit: Callable[[dict], str] | None = None) -> Units:
    """Units from per-row sample fields: each row its own unit (or `unit(sample)`), its numerator a
    field of the sample, its denominator another field or 1. A row whose numerator is null was
    left out of the score (no label) and is left out here too."""

    def units(samples: list[dict]) -> dict[str, tuple[str, float, float]]:
        return {
            s["id"]: (unit(s) if unit else s["id"], float(s[numerator]), float(s[denominator]) if denominator else 1.0)
            for s in samples
            if s[numerator] is not None
        }

    return units
