"""Rankings of several models on one task, with the paired tests that say which ones differ.

Read by `equita report A B ...` and by the leaderboard. A task's `Presentation` says what ranks
models: the distance from the unbiased value for bias scores (a model at -0.3 is not "better"
than one at +0.1), the score itself for accuracies. Runs that cannot be read side by side are
kept apart, visibly: a `--limit` run or an answer set that cannot be read is listed, never ranked;
a different major dataset version, or scores from another reader's labels of the answers (an LLM
judge's instead of the rules'), are ranked on their own; a model revision that is not pinned or a
request format unlike the others' is ranked with a mark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .compare import holm, indistinguishable_groups, paired_difference
from .contract import limited_tasks
from ..tasks import Presentation, presentation

ALPHA = 0.05
# The paired tests compare every pair of ranked runs, so their cost grows with the square of the
# runs (60 runs with samples: 1,770 pairs, about 16 s per task). Only the best MAX_PAIRED ranked
# runs of a task are compared pairwise (1,225 pairs at most) and get group letters; the ones below
# are ranked by their scores and intervals alone, and the ranking says so.
MAX_PAIRED = 50


@dataclass
class Entry:
    """One results file, with what the leaderboard knows about it."""

    results: dict
    samples: list[dict] | None = None  # its samples.jsonl, when at hand (paired tests need them)
    status: str = "local"  # "local" folder, "merged" in the results dataset, "pending" in an open pull request
    verified: bool | None = None  # `equita verify` passed, failed, or was not run
    verification: dict | None = None  # what `equita verify` said, per task
    source: str = ""  # where it came from: a folder, or the results dataset's file
    suffix: str = ""  # tells apart two results of one model revision

    @property
    def model(self) -> str:
        return self.results["model"]["id"]

    @property
    def label(self) -> str:
        return f"{self.model}@{str(self.results['model']['revision'])[:8]}{self.suffix}"

    def samples_of(self, task: str) -> list[dict]:
        return [s for s in self.samples or [] if s.get("task") == task]


@dataclass
class Standing:
    """One entry's line in a task's ranking."""

    entry: Entry
    task: dict
    value: float | None
    low: float | None
    high: float | None
    rank: int | None = None  # None: listed, not ranked (see marks)
    letters: str = ""  # entries sharing a letter cannot be told apart (paired tests, Holm-adjusted)
    marks: list[str] = field(default_factory=list)
    interval_from_samples: bool = False  # the metric reports no interval; this one resamples its units


@dataclass
class TaskRanking:
    task: str
    version: str  # the dataset's major version, "2"
    presentation: Presentation
    standings: list[Standing]
    pairs: list[dict]  # one per pair of the best MAX_PAIRED ranked entries: labels, paired_difference's output, adjusted p
    notes: list[str]
    version_note: str = ""  # set when other major versions of the dataset were ranked apart
    labels: str = "rules"  # whose labels of the answers the scores use: "rules", or the LLM judge (label_source)
    labels_note: str = ""  # set when scores from other label sources were ranked apart


def label_source(task: dict) -> str:
    """Whose labels of the answers a task's scores use: "rules" (the metric's own reading), or
    "judge MODEL, prompt vN" (an LLM judge's, `--labels judge`): scores of different sources are
    never ranked against each other."""
    if task.get("label_source") != "judge":
        return "rules"
    judged = task.get("judge") if isinstance(task.get("judge"), dict) else {}
    return f"judge {judged.get('model')}, prompt v{judged.get('prompt_version')}"


def _major(version) -> str:
    return str(version).split(".")[0]


def _error_share(p: Presentation, result: dict) -> float | None:
    return result.get(p.error_rate) if p.error_rate else None


def _standing(entry: Entry, name: str, task: dict, p: Presentation, mode: tuple) -> Standing:
    result = task["results"]
    if result is None:
        return Standing(entry, task, None, None, None, marks=[f"not computed: {task.get('not_computed') or 'no results'}"])
    value = result.get(p.headline)
    standing = Standing(entry, task, value, result.get("ci_low") if p.interval else None, result.get("ci_high") if p.interval else None)
    if value is None:
        standing.marks.append(f"no {p.headline}")
    if name in limited_tasks(entry.results):
        standing.marks.append(f"quick look (--limit {entry.results['settings']['limit']}, {task['n']} of {task.get('rows_in_dataset', '?')} rows): not ranked")
    if result.get("interpretable") is False:
        # A model whose answers mostly name neither attribute scores near 0, the unbiased value:
        # ranking it would call the least readable model the least biased.
        errors = _error_share(p, result)
        standing.marks.append("not interpretable" + (f" (p(error) {errors:.2f})" if errors is not None else "") + ": not ranked")
    if str(entry.results["model"]["revision"]).startswith("unpinned"):
        standing.marks.append("model revision not pinned")
    own = (task["request"].get("type"), task["request"].get("format"))
    if own != mode:
        standing.marks.append(f"request {own[0]}/{own[1]}, unlike the others' {mode[0]}/{mode[1]}")
    if entry.verified is False:
        standing.marks.append("verification failed")
    return standing


def _pairs(name: str, p: Presentation, ranked: list[Standing], seed: int) -> list[dict]:
    pairs = []
    for i, first in enumerate(ranked):
        for second in ranked[i + 1 :]:
            a, b = first.entry.samples_of(name), second.entry.samples_of(name)
            if not a or not b or p.units is None:
                continue
            try:
                test = paired_difference(p.units(a), p.units(b), multiplier=p.multiplier, unbiased=p.unbiased, seed=seed)
            except (KeyError, TypeError, ValueError) as error:
                pairs.append({"a": first.entry.label, "b": second.entry.label, "error": f"cannot pair the samples: {error}"})
                continue
            pairs.append({"a": first.entry.label, "b": second.entry.label, **test})
    ranking_p = "distance_p_value" if p.better == "closer" else "p_value"
    adjusted = holm({(pair["a"], pair["b"]): pair.get(ranking_p) for pair in pairs})
    for pair in pairs:
        pair["p_adjusted"] = adjusted.get((pair["a"], pair["b"]))
    return pairs


def rank_task(name: str, entries: list[Entry], seed: int = 0) -> list[TaskRanking]:
    """The rankings of `name`, one per major dataset version (newest first) and label source (the rules' first)."""
    with_task = [e for e in entries if name in e.results["tasks"]]
    if not with_task:
        return []
    rankings = []
    versions = sorted({_major(e.results["tasks"][name]["dataset"]["version"]) for e in with_task}, key=lambda v: (not v.isdigit(), -int(v) if v.isdigit() else 0, v))
    kinds = []
    for version in versions:
        at_version = [e for e in with_task if _major(e.results["tasks"][name]["dataset"]["version"]) == version]
        sources = sorted({label_source(e.results["tasks"][name]) for e in at_version}, key=lambda source: (source != "rules", source))
        kinds += [(version, source, [e for e in at_version if label_source(e.results["tasks"][name]) == source]) for source in sources]
    for version, source, members in kinds:
        p = presentation(name, members[0].results["tasks"][name]["metric"]["name"])
        if p is None:
            continue
        modes = [(e.results["tasks"][name]["request"].get("type"), e.results["tasks"][name]["request"].get("format")) for e in members]
        mode = max(set(modes), key=modes.count)
        standings = [_standing(e, name, e.results["tasks"][name], p, mode) for e in members]
        ranked = sorted((s for s in standings if s.value is not None and not any(m.endswith("not ranked") for m in s.marks)),
                        key=lambda s: (p.distance(s.value), s.entry.label))  # fmt: skip
        for number, standing in enumerate(ranked, 1):
            standing.rank = number
        paired = ranked[:MAX_PAIRED]
        pairs = _pairs(name, p, paired, seed)
        tested = {(pair["a"], pair["b"]): pair for pair in pairs if "error" not in pair}
        notes = []
        if len(ranked) > MAX_PAIRED:
            notes.append(f"Only the best {MAX_PAIRED} of the {len(ranked)} ranked runs are compared pairwise and grouped "
                         f"(the pairs grow with the square of the runs); the {len(ranked) - MAX_PAIRED} below them have no group letters.")  # fmt: skip
        if len(paired) > 1 and len(tested) == len(paired) * (len(paired) - 1) // 2:

            def differ(x: str, y: str) -> bool:
                pair = tested.get((x, y)) or tested.get((y, x))
                return pair["p_adjusted"] is not None and pair["p_adjusted"] < ALPHA

            letters = indistinguishable_groups([s.entry.label for s in paired], differ)
            for standing in paired:
                standing.letters = letters[standing.entry.label]
        elif len(paired) > 1:
            notes.append("Some ranked runs have no samples (or samples that cannot be paired): no groups of indistinguishable models.")
        listed = [s for s in standings if s.rank is None]
        rankings.append(TaskRanking(name, version, p, ranked + listed, pairs, notes, labels=source))
    if len({ranking.labels for ranking in rankings}) > 1:
        used = "; ".join(f"{r.labels} (v{r.version}): " + ", ".join(s.entry.label for s in r.standings) for r in rankings)
        for ranking in rankings:
            ranking.labels_note = (f"{name}: the answers were labelled by different readers ({used}); "
                                   "a score from one reader's labels is ranked only against scores from the same reader's, never across.")  # fmt: skip
    if len({ranking.version for ranking in rankings}) > 1:
        used = "; ".join(f"v{r.version}" + (f" ({r.labels})" if r.labels != "rules" else "") + ": " + ", ".join(s.entry.label for s in r.standings)
                         for r in sorted(rankings, key=lambda r: r.version))  # fmt: skip
        for ranking in rankings:
            ranking.version_note = f"{name}: dataset versions differ ({used}); their scores come from different prompts and are ranked separately, never compared."
    return rankings


def task_names(entries: list[Entry]) -> list[str]:
    return list(dict.fromkeys(name for entry in entries for name in entry.results["tasks"]))
