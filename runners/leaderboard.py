"""`equita leaderboard`: a static site of community results, with the statistics to read them.

Results come from local results folders and from the results dataset on the Hub (its main branch:
merged submissions; its open pull requests: pending ones). Each task gets a page (the ranking with
intervals drawn around the unbiased value, the per-group heatmap, the paired comparisons), each
model a page (all its results, links to its results.json and samples). Pages are plain HTML with
one stylesheet and one small script: they work from file:// and as a static Space, with no build
step and no network at view time.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape
from scipy import stats

from equita.builders.common import file_in_the_way, path_part
from equita.runners.ranking import Entry, Standing, TaskRanking, rank_task, task_names
from equita.runners.results import ResultsError, load_results, load_samples, read_samples, validate_results
from equita.runners.tasks import EVAL_TASKS
from equita.runners.figures import group_rows

ASSETS = ("style.css", "leaderboard.js")
MARKER = "equita-site.json"  # marks a folder as a site this command wrote (and may replace)


class LeaderboardError(Exception):
    """The leaderboard cannot be built or published; the message says why."""


# -- where results come from -------------------------------------------------------------------------


def local_entries(folders: list[Path]) -> list[Entry]:
    entries = []
    for folder in folders:
        try:
            results, samples = load_results(folder), load_samples(folder)
        except ResultsError as error:
            raise LeaderboardError(str(error)) from None
        entries.append(Entry(results, samples, status="local", source=str(folder)))
    return entries


def _record_entry(path: Path, samples_path: Path | None, status: str, source: str) -> Entry:
    """A submitted record (one model on one dataset version) read as results; it is untrusted."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise LeaderboardError(f"{source}: not a JSON results record ({error})") from None
    if not isinstance(record, dict):
        raise LeaderboardError(f"{source}: not a JSON object")
    record.setdefault("timings", {})  # a submitted record carries the tasks' timings, not the run's
    problems = validate_results(record)
    if problems:
        raise LeaderboardError(f"{source}: does not follow the results schema: {'; '.join(problems[:3])}")
    samples = None
    if samples_path is not None and samples_path.is_file():
        try:
            samples = read_samples(samples_path)
        except ResultsError as error:
            raise LeaderboardError(f"{source}: {error}") from None
    return Entry(record, samples, status=status, source=source)


def hub_entries(results_repo: str, log=print) -> list[Entry]:
    """The results dataset's merged records (main) and those of its open pull requests (pending)."""
    from huggingface_hub import HfApi, snapshot_download

    from equita.runners.publish import PublishError, _fail, _network_errors, check_repo_id

    try:
        check_repo_id(results_repo, "--results-repo")
    except PublishError as error:
        raise LeaderboardError(str(error)) from None
    api = HfApi()
    entries: list[Entry] = []
    try:
        main = Path(snapshot_download(results_repo, repo_type="dataset", allow_patterns=["*.json", "*.jsonl"]))
        merged = {}
        for path in sorted(main.glob("*/v*/*.json")):
            relative = path.relative_to(main).as_posix()
            merged[relative] = path.read_bytes()
            entries.append(_record_entry(path, path.with_suffix(".samples.jsonl"), "merged", f"{results_repo}/{relative}"))
        pulls = api.get_repo_discussions(results_repo, repo_type="dataset", discussion_type="pull_request", discussion_status="open")
        for pull in pulls:
            revision = f"refs/pr/{pull.num}"
            files = [f for f in api.list_repo_files(results_repo, repo_type="dataset", revision=revision) if f.endswith((".json", ".jsonl"))]
            folder = Path(snapshot_download(results_repo, repo_type="dataset", revision=revision, allow_patterns=files))
            for path in sorted(folder.glob("*/v*/*.json")):
                relative = path.relative_to(folder).as_posix()
                if merged.get(relative) == path.read_bytes():
                    continue  # what the pull request shares with main is not pending
                entries.append(_record_entry(path, path.with_suffix(".samples.jsonl"), "pending", f"{results_repo}#{pull.num} {relative}"))
    except _network_errors() as error:
        raise LeaderboardError(str(_fail(f"{results_repo}: cannot read the results dataset", error))) from None
    log(f"{results_repo}: {sum(e.status == 'merged' for e in entries)} merged, {sum(e.status == 'pending' for e in entries)} pending")
    return entries


def unique(entries: list[Entry]) -> list[Entry]:
    """One entry per distinct result (merged before pending before local), labels made unique."""
    rank = {"merged": 0, "pending": 1, "local": 2}
    seen, kept = set(), []
    for entry in sorted(entries, key=lambda e: rank.get(e.status, 3)):
        digest = hashlib.sha256(json.dumps([entry.results["model"], entry.results["tasks"]], sort_keys=True).encode()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            kept.append(entry)
    labels: dict[str, int] = {}
    for entry in kept:
        labels[entry.label] = labels.get(entry.label, 0) + 1
        if labels[entry.label] > 1:
            entry.suffix = f" #{labels[entry.label]}"  # two results of one model revision (other settings)
    return kept


def verify_entries(entries: list[Entry], datasets: str | None, source_dir: Path | None, log=print) -> None:
    """Recompute each entry's scores from its samples (`equita verify`); the pages mark the outcome."""
    from equita.runners.verify import VerifyError, verify_results

    for entry in entries:
        if not entry.samples:
            entry.verified, entry.verification = None, {"reason": "no samples"}
            continue
        try:
            outcome = verify_results(entry.results, entry.samples, datasets=datasets, source_dir=source_dir, log=lambda message: None)
        except VerifyError as error:
            entry.verified, entry.verification = False, {"reason": str(error)}
            continue
        mismatched = [name for name, task in outcome["tasks"].items() if task["status"] == "mismatch"]
        entry.verified = False if mismatched else True if outcome["verified"] else None
        entry.verification = outcome
        log(f"verify {entry.label}: " + ("verified" if entry.verified else "mismatch in " + ", ".join(mismatched) if mismatched else "not verifiable here"))


# -- what the pages show -------------------------------------------------------------------------------


def sample_interval(standing: Standing, name: str, ranking: TaskRanking, seed: int = 0) -> None:
    """For a metric that reports no interval: a percentile bootstrap over its units, from the samples."""
    p = ranking.presentation
    samples = standing.entry.samples_of(name)
    if p.interval or p.units is None or not samples or standing.value is None:
        return
    try:
        units: dict[str, list[float]] = {}
        for unit, numerator, denominator in p.units(samples).values():
            pair = units.setdefault(unit, [0.0, 0.0])
            pair[0] += numerator
            pair[1] += denominator
    except (KeyError, TypeError, ValueError):
        return
    if len(units) < 2:
        return
    numerators, denominators = np.array(list(units.values())).T

    def ratio(num, den, axis=-1):
        total = den.sum(axis=axis)
        return p.multiplier * np.where(total > 0, num.sum(axis=axis) / np.maximum(total, 1e-300), 0.0)

    result = stats.bootstrap((numerators, denominators), ratio, paired=True, vectorized=True, n_resamples=1000,
                             method="percentile", random_state=np.random.default_rng(seed))  # fmt: skip
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if np.isfinite(low) and np.isfinite(high):
        standing.low, standing.high = low, high
        standing.interval_from_samples = True


def slug(text: str) -> str:
    """A file name for any model id or task name, one to one ("/" and every other unsafe character as %XX)."""
    return path_part(quote(text, safe="-.").replace("%", "_"), "page name")


@dataclass
class Page:
    path: str
    template: str
    context: dict


def _entry_id(entry: Entry) -> str:
    return slug(entry.label) + "-" + hashlib.sha256(entry.source.encode()).hexdigest()[:8]


def _bar(value, low, high, p) -> dict:
    """Where the headline and its interval fall on the task's scale, in percent of the bar's width."""
    lo, hi = p.scale

    def at(x):
        return None if x is None else max(0.0, min(100.0, (x - lo) / (hi - lo) * 100))

    reference = p.unbiased if p.unbiased is not None else lo
    return {"value": at(value), "low": at(low), "high": at(high), "reference": at(reference),
            "above": value is not None and value > reference}  # fmt: skip


def _heat(value, p) -> str:
    """A cell's background: red above the unbiased value, blue below (bias scores); green for higher-is-better."""
    if value is None:
        return "transparent"
    lo, hi = p.scale
    if p.unbiased is not None:
        span = max(hi - p.unbiased, p.unbiased - lo)
        strength = min(1.0, abs(value - p.unbiased) / span)
        colour = (192, 57, 43) if value > p.unbiased else (36, 113, 163)
    else:
        strength = min(1.0, max(0.0, (value - lo) / (hi - lo)))
        colour = (30, 132, 73)
    return f"rgba({colour[0]}, {colour[1]}, {colour[2]}, {0.1 + 0.8 * strength:.2f})"


def _format(value, p) -> str:
    if value is None:
        return "-"
    if p.unbiased == 0:
        return f"{value:+.3f}"
    return f"{value:.1f}" if p.scale[1] > 1 else f"{value:.3f}"


def build_site(entries: list[Entry], out: Path, force: bool = False, title: str = "equita leaderboard", log=print) -> Path:
    """Write the site into `out` (index.html, task-*.html, model-*.html, files/); returns index.html."""
    out = Path(out)
    blocked = file_in_the_way(out)
    if blocked:
        raise LeaderboardError(f"--out {out}: {blocked}")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        # The site replaces an earlier site, never a folder of other things.
        raise LeaderboardError(f"--out {out}: exists, is not empty and is not an equita leaderboard (no {MARKER}); choose another --out")
    if not entries:
        raise LeaderboardError("no results to show: give results folders or --results-repo")
    entries = unique(entries)
    final, out = out, out.parent / f".{out.name}.building"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    environment = Environment(loader=PackageLoader("equita.runners", "site"), autoescape=select_autoescape(["html", "j2"]))
    ids = {id(entry): _entry_id(entry) for entry in entries}
    rankings = [ranking for name in task_names(entries) for ranking in rank_task(name, entries)]
    pages = []
    task_pages = []
    for ranking in rankings:
        p = ranking.presentation
        for standing in ranking.standings:
            sample_interval(standing, ranking.task, ranking)
        page = f"task-{slug(ranking.task)}-v{slug(ranking.version)}.html"
        groups = list(dict.fromkeys(g for s in ranking.standings if s.task["results"] for g, _ in group_rows(s.task["results"], p.group_order)[1:]))
        rows = []
        for standing in ranking.standings:
            result = standing.task["results"] or {}
            by_group = dict(group_rows(result, p.group_order)) if result else {}
            rows.append({
                "standing": standing, "entry": standing.entry, "id": ids[id(standing.entry)], "bar": _bar(standing.value, standing.low, standing.high, p),
                "value": _format(standing.value, p), "low": _format(standing.low, p), "high": _format(standing.high, p),
                "distance": p.distance(standing.value) if standing.value is not None else None,
                "error_rate": result.get(p.error_rate) if p.error_rate else None,
                "cells": [{"value": by_group[g].get(p.headline) if g in by_group else None, "text": _format(by_group[g].get(p.headline), p) if g in by_group else "",
                           "colour": _heat(by_group[g].get(p.headline) if g in by_group else None, p)} for g in groups],
                "details": [result.get(key) for key, _ in p.details],
            })  # fmt: skip
        pages.append(Page(page, "task.html.j2", {"ranking": ranking, "p": p, "rows": rows, "groups": groups, "description": EVAL_TASKS[ranking.task].description if ranking.task in EVAL_TASKS else ""}))
        task_pages.append({"page": page, "ranking": ranking, "leader": next((row for row in rows if row["standing"].rank == 1), None), "entries": len(rows)})
    models = []
    for entry in entries:
        page = f"model-{ids[id(entry)]}.html"
        files = f"files/{ids[id(entry)]}"
        (out / files).mkdir(parents=True, exist_ok=True)
        (out / files / "results.json").write_text(json.dumps(entry.results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        if entry.samples is not None:
            (out / files / "samples.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in entry.samples), encoding="utf-8")
        lines = []
        for ranking, task_page in zip(rankings, task_pages):
            standing = next((s for s in ranking.standings if s.entry is entry), None)
            if standing is not None:
                lines.append({"ranking": ranking, "page": task_page["page"], "standing": standing, "value": _format(standing.value, ranking.presentation),
                              "low": _format(standing.low, ranking.presentation), "high": _format(standing.high, ranking.presentation),
                              "bar": _bar(standing.value, standing.low, standing.high, ranking.presentation), "of": len(ranking.standings)})  # fmt: skip
        pages.append(Page(page, "model.html.j2", {"entry": entry, "lines": lines, "files": files}))
        models.append({"entry": entry, "page": page, "tasks": len(lines)})
    pages.append(Page("index.html", "index.html.j2", {"tasks": task_pages, "models": models}))
    context = {"title": title, "pages": {"tasks": task_pages, "models": models}}
    for page in pages:
        html = environment.get_template(page.template).render(**context, **page.context, page=page.path)
        (out / page.path).write_text(html, encoding="utf-8")
    for asset in ASSETS:
        shutil.copyfile(Path(__file__).parent / "site" / asset, out / asset)
    (out / MARKER).write_text(json.dumps({"pages": len(pages), "results": len(entries)}) + "\n", encoding="utf-8")
    # The new site replaces the old one only once it is whole.
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    log(f"wrote {len(pages)} pages for {len(entries)} results to {final}")
    return final / "index.html"


def publish_site(out: Path, space_id: str, log=print) -> str:
    """Upload the site as a static Hugging Face Space, in one commit; returns the commit id."""
    from huggingface_hub import HfApi

    from equita.runners.publish import PublishError, _fail, _network_errors, check_repo_id

    try:
        check_repo_id(space_id, "--space")
    except PublishError as error:
        raise LeaderboardError(str(error)) from None
    out = Path(out)
    if not (out / "index.html").is_file():
        raise LeaderboardError(f"{out}: no index.html; build the site first")
    card = "---\ntitle: equita leaderboard\nsdk: static\napp_file: index.html\npinned: false\n---\n\nBias and gender-fairness results of language models in Italian, built by `equita leaderboard`.\n"
    (out / "README.md").write_text(card, encoding="utf-8")
    api = HfApi()
    try:
        api.create_repo(space_id, repo_type="space", space_sdk="static", exist_ok=True)
        commit = api.upload_folder(folder_path=str(out), repo_id=space_id, repo_type="space", commit_message="equita: publish the leaderboard",
                                   delete_patterns=["*.html", "files/**"])  # fmt: skip
    except _network_errors() as error:
        raise LeaderboardError(str(_fail(f"{space_id}: publishing the leaderboard Space failed; the local site is unchanged, retry", error))) from None
    log(f"published {out} to the Space {space_id}: commit {commit.oid}")
    return commit.oid
