"""Drawing and formatting shared by the benchmarks' report sections (runners/tasks/<benchmark>.py).

Everything here reads a task's results through its `Presentation` (headline key, interval keys,
unbiased value, scale), so one score bar serves the ItaP-AT score (0 unbiased, -1..1) and the
Jobs share (0.5 unbiased, 0..1) alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class _Pyplot:
    """matplotlib.pyplot, imported when something is first drawn: the command line starts
    without it (a third of a second), and only a report draws."""

    def __getattr__(self, name: str):
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot

        return getattr(matplotlib.pyplot, name)


plt = _Pyplot()


def save(figure, axes, title: str, path: Path) -> None:
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def interval_text(result: dict, key: str = "bias_score", signed: bool = True) -> str:
    """"+0.125 [-0.010, +0.250]": a value with its 95% interval, or the value alone when it has none."""
    form = "+.3f" if signed else ".3f"
    if result.get("ci_low") is None:
        return f"{result[key]:{form}}"
    return f"{result[key]:{form}} [{result['ci_low']:{form}}, {result['ci_high']:{form}}]"


def group_rows(result: dict, order: tuple[str, ...] = ()) -> list[tuple[str, dict]]:
    """("all", overall) then each group, in the dataset's config order (base-2 before base-10), unknown groups last by name."""
    rank = {name: i for i, name in enumerate(order)}
    groups = result.get("groups") or {}
    return [("all", result), *sorted(groups.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))]


def score_plot(result: dict, title: str, path: Path, presentation, order: tuple[str, ...] = ()) -> None:
    """Bars of the headline per group, drawn from the unbiased value, with their 95% intervals."""
    rows = group_rows(result, order)
    key, neutral = presentation.headline, presentation.unbiased
    figure, axes = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    scores = np.array([r[key] for _, r in rows])
    low = np.array([r["ci_low"] if r.get("ci_low") is not None else r[key] for _, r in rows])
    high = np.array([r["ci_high"] if r.get("ci_high") is not None else r[key] for _, r in rows])
    y = np.arange(len(rows))[::-1]
    axes.barh(y, scores - neutral, left=neutral, color=["#c0392b" if s > neutral else "#2471a3" for s in scores], alpha=0.8)
    # A percentile interval need not contain the point estimate; clip so the bar still draws.
    axes.errorbar(scores, y, xerr=np.clip([scores - low, high - scores], 0, None), fmt="none", ecolor="black", capsize=3, linewidth=1)
    axes.axvline(neutral, color="black", linewidth=0.8)
    axes.set_yticks(y, [name for name, _ in rows])
    axes.set_xlim(*presentation.scale)
    axes.set_xlabel(presentation.axis)
    save(figure, axes, title, path)
