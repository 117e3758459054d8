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
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape

from ...builders.common import file_in_the_way, path_part
from ..results.compare import ratio_interval
from ..results.contract import RESULTS_SCHEMA, ResultsError, load_results, load_samples, read_samples, shown, validate_results
from ..results.figures import group_rows
from ..results.ranking import Entry, Standing, TaskRanking, rank_task, task_names
from ..tasks import EVAL_TASKS

ASSETS = ("style.css", "leaderboard.js")
STANDINGS = "leaderboard.json"
MARKER = "equita-site.json"  # marks a folder as a site this command wrote (and may replace)


class LeaderboardError(Exception):
    """The leaderboard cannot be built or published; the message says why."""


# -- where results come from -------------------------------------------------------------------------


def local_entries(folders: list[Path], log=print) -> list[Entry]:
    """The results folders given, as entries. A bad one never stops the build: a folder that is not
    results following the schema is left out with one line naming it and why ("left out <folder>:
    ..."); samples that cannot be read are left out with a note (the results stay, unverifiable)."""
    entries = []
    for folder in folders:
        try:
            results = load_results(folder)
        except ResultsError as error:
            log(f"left out {shown(error)}")
            continue
        try:
            samples = load_samples(folder)
        except ResultsError as error:
            log(f"{shown(folder)}: samples left out, shown without them (not verifiable): {shown(error)}")
            samples = None
        entries.append(Entry(results, samples, status="local", source=str(folder)))
    if len(entries) < len(folders):
        log(f"{len(folders) - len(entries)} of {len(folders)} results folders left out (named above)")
    return entries


def _sha256(path: Path) -> str:
    """A file's sha256, read in blocks (samples from the Hub can be a gigabyte)."""
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _record_entry(path: Path, samples_path: Path | None, status: str, source: str, at: tuple[str, str] | None = None, log=print) -> Entry:
    """A submitted record (one model on one dataset version) read as results; it is untrusted.

    Refused with LeaderboardError("<source>: <why>"): not a UTF-8 JSON object, not the results
    schema, or (`at` = the dataset id and version of its path) about another dataset version than
    its path says. Its samples (`samples_path`, when given) are read too; samples that cannot be
    read, or whose sha256 is not the one the record names, are left out with a note (the record
    stays, unverifiable)."""

    try:
        record = json.loads(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise LeaderboardError(f"{source}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except (ValueError, RecursionError) as error:  # ValueError: not JSON, or an integer over json's 4300 digits
        raise LeaderboardError(f"{source}: not a JSON results record ({str(error)[:200]})") from None
    if not isinstance(record, dict):
        raise LeaderboardError(f"{source}: not a JSON object (a record is one object; this is a {type(record).__name__})")
    if record.get("schema") != RESULTS_SCHEMA:
        raise LeaderboardError(f"{source}: schema {str(record.get('schema'))[:80]!r}, this equita reads {RESULTS_SCHEMA!r}")
    record.setdefault("timings", {})  # a submitted record carries the tasks' timings, not the run's
    problems = validate_results(record)
    if problems:
        raise LeaderboardError(f"{source}: does not follow the results schema: {'; '.join(problems[:3])}")
    if at is not None:
        dataset, version = at
        claimed = record.get("dataset")
        if not isinstance(claimed, dict) or (claimed.get("id"), claimed.get("version")) != (dataset, version):
            raise LeaderboardError(f"{source}: its dataset is not {dataset} v{version}, the one its path names")
        for name, task in record["tasks"].items():
            if (task["dataset"]["id"], task["dataset"]["version"]) != (dataset, version):
                raise LeaderboardError(f"{source}: task {name} ran on {str(task['dataset']['id'])[:80]!r} v{str(task['dataset']['version'])[:20]}, not on {dataset} v{version} as its path says")
    samples = None
    if samples_path is not None and Path(samples_path).is_file():
        expected = record.get("samples", {}).get("sha256") if isinstance(record.get("samples"), dict) else None
        if isinstance(expected, str) and _sha256(samples_path) != expected:
            log(f"{source}: its samples differ from the sha256 the record names; shown without samples (not verifiable)")
        else:
            try:
                samples = read_samples(samples_path)
            except ResultsError as error:
                log(f"{source}: samples left out, shown without them (not verifiable): {str(error).replace(str(samples_path), 'samples')}")
    return Entry(record, samples, status=status, source=source)


def hub_entries(results_repo: str, log=print) -> list[Entry]:
    """The results dataset's merged records (main) and those of its open pull requests (pending).

    A record is `<dataset id>/v<X.Y.Z>/<file>.json`, its samples `<file>.samples.jsonl` next to
    it. A pull request's pending records are those it adds or changes since the commit it
    branched from (not what it shares with main, nor an older copy of a record main has since
    changed); everything is read at a fixed commit, so a snapshot never mixes two states.

    Bad submissions never stop the build: a record at another path, not following the results
    schema, disagreeing with its path, or too large, is left out with one line naming it and why
    ("left out <repo>/<path>: <why>"); so is an open pull request whose files cannot be read. Main
    itself must be read whole: when the dataset, its listing or one of its merged files cannot be
    downloaded, LeaderboardError (retry), so a passing network failure never builds a leaderboard
    without some merged results. Paths from the Hub are checked before any becomes a local path.
    """
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.hf_api import RepoFile

    from .publish import PublishError, _fail, _network_errors, check_repo_id

    max_record, max_samples = 16 * 2**20, 1024 * 2**20  # a record is kilobytes, its samples megabytes
    suffix = ".samples.jsonl"
    try:
        check_repo_id(results_repo, "--results-repo")
    except PublishError as error:
        raise LeaderboardError(str(error)) from None
    api = HfApi()
    network = _network_errors()

    def shown(text: str) -> str:  # text from the Hub on one line: a control character as its escape
        return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)

    def failed(what: str, error: Exception) -> str:  # the client's messages span lines; ours are one, token-free
        return " ".join(str(_fail(what, error)).split())

    def files_at(revision: str) -> dict[str, tuple[str, int]]:
        """path -> (blob id, size) of every file at a commit."""
        listing = api.list_repo_tree(results_repo, repo_type="dataset", revision=revision, recursive=True)
        return {item.path: (item.blob_id, item.size) for item in listing if isinstance(item, RepoFile)}

    def read(revision: str, path: str, files: dict, status: str, source: str) -> Entry:
        """One record and its samples at a commit; LeaderboardError for a bad one, network errors as raised."""
        parts = path.split("/")
        if len(parts) != 3 or not re.fullmatch(r"v\d+\.\d+\.\d+", parts[1]) or parts[2] == ".json":
            raise LeaderboardError(f"{source}: not at <dataset id>/v<X.Y.Z>/<file>.json")
        try:
            for part in parts:
                path_part(part, "path component")
        except ValueError as error:
            raise LeaderboardError(f"{source}: {error}") from None
        if files[path][1] > max_record:
            raise LeaderboardError(f"{source}: {files[path][1]} bytes, larger than a record can be ({max_record})")
        local = Path(hf_hub_download(results_repo, path, repo_type="dataset", revision=revision))
        samples, samples_local = path[: -len(".json")] + suffix, None
        if samples in files:
            try:
                path_part(samples.split("/")[-1], "samples file")
            except ValueError as error:
                log(f"{source}: samples left out ({error}); shown without them")
            else:
                if files[samples][1] > max_samples:
                    log(f"{source}: samples of {files[samples][1]} bytes left out (more than {max_samples}); shown without them")
                else:
                    samples_local = Path(hf_hub_download(results_repo, samples, repo_type="dataset", revision=revision))
        return _record_entry(local, samples_local, status, source, at=(parts[0], parts[1][1:]), log=lambda message: log(shown(message)))

    try:
        main = api.repo_info(results_repo, repo_type="dataset").sha
        main_files = files_at(main)
        history = {commit.commit_id for commit in api.list_repo_commits(results_repo, repo_type="dataset", revision=main)}
        pulls = [
            pull for pull in api.get_repo_discussions(results_repo, repo_type="dataset", discussion_type="pull_request", discussion_status="open")
            if pull.is_pull_request and pull.status == "open"
        ]  # fmt: skip
    except network as error:
        raise LeaderboardError(failed(f"{results_repo}: cannot read the results dataset; retry", error)) from None
    entries: list[Entry] = []
    left_out = 0

    def leave_out(why: str) -> None:
        nonlocal left_out
        left_out += 1
        log(f"left out {shown(why)}")

    for path in sorted(p for p in main_files if p.endswith(".json")):
        try:
            entries.append(read(main, path, main_files, "merged", f"{results_repo}/{shown(path)}"))
        except LeaderboardError as error:
            leave_out(str(error))
        except network as error:
            raise LeaderboardError(failed(f"{results_repo}/{shown(path)}: cannot be downloaded; retry", error)) from None
    for pull in sorted(pulls, key=lambda pull: pull.num):
        where = f"{results_repo}#{pull.num}"
        try:
            commits = [commit.commit_id for commit in api.list_repo_commits(results_repo, repo_type="dataset", revision=f"refs/pr/{pull.num}")]
            if not commits:
                raise LeaderboardError("it has no commits")
            base = next((commit for commit in commits if commit in history), None)
            head_files, base_files = files_at(commits[0]), files_at(base) if base else {}
        except LeaderboardError as error:
            leave_out(f"pull request {where}: {error}")
            continue
        except network as error:
            leave_out(f"pull request {where}: {failed('its files cannot be read', error)}")
            continue
        changed = {path for path, blob in head_files.items() if blob[0] != base_files.get(path, (None,))[0] and blob[0] != main_files.get(path, (None,))[0]}
        records = {path for path in changed if path.endswith(".json")}
        records |= {path[: -len(suffix)] + ".json" for path in changed if path.endswith(suffix) and path[: -len(suffix)] + ".json" in head_files}
        for path in sorted(records):
            try:
                entries.append(read(commits[0], path, head_files, "pending", f"{where} {shown(path)}"))
            except LeaderboardError as error:
                leave_out(str(error))
            except network as error:
                leave_out(f"{where} {shown(path)}: {failed('cannot be downloaded', error)}")
    merged, pending = sum(e.status == "merged" for e in entries), sum(e.status == "pending" for e in entries)
    note = f"; {left_out} left out (named above)" if left_out else ""
    log(f"{results_repo}: {merged} merged, {pending} pending from {len(pulls)} open pull requests{note}")
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
    from ..results.verify import VerifyError, verify_results

    for entry in entries:
        if not entry.samples:
            entry.verified, entry.verification = None, {"reason": "no samples"}
            continue
        try:
            outcome = verify_results(entry.results, entry.samples, datasets=datasets, source_dir=source_dir, log=lambda message: None)
        except VerifyError as error:
            entry.verified, entry.verification = False, {"reason": str(error)}
            continue
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            # Crafted samples that verify could not even read: this entry fails, the build goes on.
            entry.verified, entry.verification = False, {"reason": f"could not be verified ({type(error).__name__}: {error})"[:300]}
            log(f"verify {entry.label}: could not be verified ({type(error).__name__})")
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
        _, low, high = ratio_interval(p.units(samples), multiplier=p.multiplier, n_resamples=1000, seed=seed)
    except (KeyError, TypeError, ValueError):
        return
    if low is not None:
        standing.low, standing.high, standing.interval_from_samples = low, high, True


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


def standings_data(rankings: list[TaskRanking], ids: dict) -> list[dict]:
    """Every ranking as plain data: what ranks, each entry's numbers, marks and files, and the pairs."""
    data = []
    for ranking in rankings:
        p = ranking.presentation
        data.append({
            "task": ranking.task, "dataset_major_version": ranking.version, "labels": ranking.labels, "headline": p.headline, "unbiased": p.unbiased, "better": p.better,
            "standings": [{"model": s.entry.model, "revision": s.entry.results["model"]["revision"], "label": s.entry.label, "status": s.entry.status,
                           "verified": s.entry.verified, "rank": s.rank, "group": s.letters or None, "value": s.value, "ci_low": s.low, "ci_high": s.high,
                           "interval_from_samples": s.interval_from_samples, "dataset_version": s.task["dataset"]["version"], "marks": s.marks,
                           "results": f"files/{ids[id(s.entry)]}/results.json"} for s in ranking.standings],
            "pairs": ranking.pairs, "notes": ranking.notes + [note for note in (ranking.version_note, ranking.labels_note) if note],
        })  # fmt: skip
    return data


def overview(rankings: list[TaskRanking], models: list[dict]) -> list[dict]:
    """The index's table: every model ranked on at least one task, one cell per task ranking.

    A cell is the model page's line for that ranking (headline, interval, rank, task page); a
    model listed but not ranked there shows its value without a rank, and a task it was not run
    on is empty. Rows come in the order of their best rank.
    """
    rows = []
    for model in models:
        by_ranking = {id(line["ranking"]): line for line in model["lines"]}
        ranks = [line["standing"].rank for line in model["lines"] if line["standing"].rank is not None]
        if ranks:
            rows.append({"model": model, "cells": [by_ranking.get(id(ranking)) for ranking in rankings], "best": min(ranks), "ranked": len(ranks)})
    rows.sort(key=lambda row: (row["best"], -row["ranked"], row["model"]["entry"].label))
    return rows


# What a site of an equita that did not list its files in MARKER writes: its pages, assets and files/.
OLD_SITE_FILES = re.compile(r"index\.html|(task|model)-[^/]+\.html|style\.css|leaderboard\.js|leaderboard\.json|files(/[^/]+(/(results\.json|samples\.jsonl))?)?")


def _under(folder: Path) -> set[str]:
    """Every file and folder below `folder` (relative paths); a link is one entry, never followed."""
    found = set()
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            found.add((Path(root) / name).relative_to(folder).as_posix())
    return found


def _written_by_site(out: Path) -> set[str]:
    """What the earlier site at `out` wrote (relative paths, its folders included), as its MARKER lists it."""
    try:
        listed = json.loads((out / MARKER).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        listed = None
    present = _under(out)
    if isinstance(listed, list) and all(isinstance(name, str) for name in listed):
        written = {name for name in listed if name in present}
        written |= {parent.as_posix() for name in written for parent in Path(name).parents if parent != Path(".")}
    else:
        written = {name for name in present if OLD_SITE_FILES.fullmatch(name)}
    # The site writes no links: a link there is someone else's.
    return {name for name in written if not (out / name).is_symlink()} | {MARKER}


def check_out(out: Path, inputs: list[Path] = ()) -> set[str]:
    """Refuse an --out whose replacement could delete anything the site did not write; returns what
    the earlier site there wrote (empty when there is none), the only files a rebuild removes.

    Refused: a file; the current folder or a folder holding it; a folder holding one of the results
    folders given, or inside one; a non-empty folder that is not a site; a site holding anything it
    did not write (notes, a results folder)."""
    out = Path(out)
    blocked = file_in_the_way(out)
    if blocked:
        raise LeaderboardError(f"--out {shown(out)}: {blocked}")
    target, here = out.resolve(), Path.cwd().resolve()
    if target == here or target in here.parents:
        raise LeaderboardError(f"--out {shown(out)}: is the current folder or holds it; give the site a folder of its own (e.g. --out {shown(out / 'leaderboard')})")
    for folder in inputs:
        given = Path(folder).resolve()
        if given == target or target in given.parents:
            raise LeaderboardError(f"--out {shown(out)}: holds the results folder {shown(folder)}; give the site a folder outside the results")
        if given in target.parents:
            raise LeaderboardError(f"--out {shown(out)}: is inside the results folder {shown(folder)}; give the site a folder outside the results")
    if not out.is_dir() or not any(out.iterdir()):
        return set()
    if not (out / MARKER).is_file():
        # The site replaces an earlier site, never a folder of other things.
        raise LeaderboardError(f"--out {shown(out)}: exists, is not empty and is not an equita leaderboard (no {MARKER}); choose another --out")
    written = _written_by_site(out)
    others = sorted({name.split("/")[0] if name.split("/")[0] not in written else name for name in _under(out) - written})
    if others:
        named = ", ".join(shown(name) for name in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise LeaderboardError(f"--out {shown(out)}: holds {named}, which the earlier site did not write; "
                               "move them out or choose another --out (a rebuild removes only the site's own files)")  # fmt: skip
    return written


def _remove_site(folder: Path, written: set[str], log=print) -> None:
    """Remove an earlier site moved aside: only the files it wrote, then its folders once empty."""
    for name in sorted(written, key=lambda name: -name.count("/")):
        path = folder / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            try:
                path.rmdir()
            except OSError:
                pass  # it holds something the site did not write: kept
    try:
        folder.rmdir()
    except OSError:
        log(f"kept {folder}: it holds files the earlier site did not write")


def build_site(entries: list[Entry], out: Path, force: bool = False, title: str = "equita leaderboard", inputs: list[Path] = (), log=print) -> Path:
    """Write the site into `out` (index.html, task-*.html, model-*.html, files/); returns index.html.

    The site is built in a new hidden folder next to `out` and takes its place once whole. An
    earlier site there is replaced: the files it wrote (listed in its MARKER) are removed, nothing
    else; see check_out for what is refused. `inputs`: the results folders given on the command line."""
    out = Path(out)
    local = [Path(entry.source) for entry in entries if entry.status == "local"]
    written = check_out(out, [*inputs, *local])
    if not entries:
        raise LeaderboardError("no results to show: " + ("every one given was left out (named above)" if inputs else "give results folders or --results-repo"))
    entries = unique(entries)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.resolve().name}.building-", dir=parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would keep the site from a web server or another user
    try:
        pages = _write_site(entries, staging, title)
        _put_in_place(staging, out, written, log)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # this build's own folder (gone once in place)
        raise
    log(f"wrote {pages} pages for {len(entries)} results to {out}")
    return out / "index.html"


def _put_in_place(staging: Path, out: Path, written: set[str], log=print) -> None:
    """The new site takes the place of `out`; an earlier site there is moved aside, then its own files removed."""
    if not written:
        if out.is_dir():
            out.rmdir()  # empty: check_out refuses anything else that is not a site
        staging.rename(out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.resolve().name}.replaced-", dir=out.resolve().parent))
    aside.rmdir()  # a fresh name to move the earlier site to
    out.rename(aside)
    try:
        staging.rename(out)
    except OSError:
        aside.rename(out)  # the earlier site back in its place
        raise
    _remove_site(aside, written, log)


def _write_site(entries: list[Entry], out: Path, title: str) -> int:
    """Every page, asset and file of the site into the empty folder `out`; returns the number of pages."""
    environment = Environment(loader=PackageLoader("equita.runners.hub", "site"), autoescape=select_autoescape(["html", "j2"]))
    ids = {id(entry): _entry_id(entry) for entry in entries}
    rankings = [ranking for name in task_names(entries) for ranking in rank_task(name, entries)]
    pages = []
    task_pages = []
    for ranking in rankings:
        p = ranking.presentation
        for standing in ranking.standings:
            sample_interval(standing, ranking.task, ranking)
        page = f"task-{slug(ranking.task)}-v{slug(ranking.version)}"
        if ranking.labels != "rules":  # "judge MODEL, prompt vN" -> -judge-MODEL-prompt-vN, numbered if two judges' names meet
            page += "-" + slug(ranking.labels.replace(", prompt v", " prompt-v").replace(" ", "-"))
            page += f"-{sum(t['page'].startswith(page) for t in task_pages) + 1}" if any(t["page"] == page + ".html" for t in task_pages) else ""
        page += ".html"
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
        models.append({"entry": entry, "page": page, "tasks": len(lines), "lines": lines})
    pages.append(Page("index.html", "index.html.j2", {"tasks": task_pages, "models": models, "overview": overview(rankings, models)}))
    # The standings as data, for anyone who cites or re-plots them (the pages show the same numbers).
    (out / STANDINGS).write_text(json.dumps(standings_data(rankings, ids), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    context = {"title": title, "pages": {"tasks": task_pages, "models": models}, "equita": metadata.version("equita"), "standings": STANDINGS}
    for page in pages:
        html = environment.get_template(page.template).render(**context, **page.context, page=page.path)
        (out / page.path).write_text(html, encoding="utf-8")
    for asset in ASSETS:
        shutil.copyfile(Path(__file__).parent / "site" / asset, out / asset)
    # The files this site wrote: all a rebuild may remove.
    files = sorted(name for name in _under(out) if (out / name).is_file())
    (out / MARKER).write_text(json.dumps({"pages": len(pages), "results": len(entries), "files": files}) + "\n", encoding="utf-8")
    return len(pages)


def publish_site(out: Path, space_id: str, log=print) -> str:
    """Upload the built site as a static Hugging Face Space, in one commit; returns the commit id.

    The Space's card, README.md (front matter `sdk: static`, `app_file: index.html`), is added in
    the commit only: the site folder stays as `build_site` wrote it. Files an earlier site left in
    the Space that this one lacks (pages, files/, assets) are removed in the same commit; files a
    maintainer added there otherwise stay. A Space that exists with another SDK is refused, never
    turned into a static one.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.utils import filter_repo_objects

    from .publish import PublishError, _fail, _network_errors, check_repo_id

    try:
        check_repo_id(space_id, "--space")
    except PublishError as error:
        raise LeaderboardError(str(error)) from None
    out = Path(out)
    if not (out / MARKER).is_file() or not (out / "index.html").is_file():
        raise LeaderboardError(f"{out}: not a site built by `equita leaderboard` (no {MARKER} or index.html); build it first")
    card = ("---\ntitle: equita leaderboard\nsdk: static\napp_file: index.html\npinned: false\n---\n\n"
            "Bias and gender-fairness results of language models in Italian, built by `equita leaderboard`.\n")  # fmt: skip
    site = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and not p.is_symlink())
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(out / name)) for name in site if name not in (MARKER, "README.md")]
    operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode("utf-8")))
    added = {operation.path_in_repo for operation in operations}
    api = HfApi()
    try:
        api.create_repo(space_id, repo_type="space", space_sdk="static", exist_ok=True)
        sdk = api.repo_info(space_id, repo_type="space").sdk
        if sdk not in (None, "static"):
            raise LeaderboardError(f"--space {space_id}: is a {sdk} Space, not a static one; publishing would replace its app, choose another --space")
        present = api.list_repo_files(space_id, repo_type="space")
        stale = [path for path in filter_repo_objects(present, allow_patterns=["*.html", "files/*", *ASSETS, MARKER]) if path not in added]
        commit = api.create_commit(
            space_id, repo_type="space", commit_message="equita: publish the leaderboard",
            operations=[*(CommitOperationDelete(path_in_repo=path) for path in stale), *operations],
        )  # fmt: skip
    except _network_errors() as error:
        message = str(_fail(f"{space_id}: publishing the leaderboard Space failed, nothing was published (a commit is all or nothing); the local site is unchanged, retry the same command", error))
        raise LeaderboardError(" ".join(message.split())) from None  # one line: the client's message spans several
    log(f"published {out} to the Space {space_id}: commit {commit.oid} ({len(added)} files, {len(stale)} stale ones removed)")
    return commit.oid
