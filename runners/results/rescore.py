"""`equita rescore`: score a results folder again from its samples with the metric modules
installed now, without the model.

When the answer classifier or a metric improves, published results should follow. Each sample
holds the raw answer; rescoring rebuilds every request from its dataset row (the data must be
the data the run used, and each recorded prompt must be bound to its request by its key, as
`equita verify` checks), feeds the recorded answers to the task's metric module as `equita run`
does (`run.score`), and writes a complete results folder: results.json, samples.jsonl with the
new labels, report.md. The folder it reads is never written to.

Each rescored task records what scored it before (`rescored`: the metric module's sha256 and,
for ItaP-AT, the classifier version), and the run-level `rescored_from` keeps the original run's
`created` and `equita`. A task the run did not compute is copied as it was: there is no answer
to score.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import data
from ..cache import misfit, request_key
from ..judge import JudgeOptions
from ..run import LOCK_FILE, RunError, check_out, equita_provenance, judgeable, judged, locked, score, strict, write_atomic
from ..tasks import EVAL_TASKS
from . import report
from .contract import ResultsError, headline, load_results, read_samples
from .verify import _same_data


class RescoreError(ValueError):
    """A results folder that cannot be rescored; the message says which task and why."""


@dataclass
class TaskChange:
    """How one task moved: its labels (old -> new, per row) and its headline with its interval."""

    labels: Counter = field(default_factory=Counter)
    headline: str = ""
    before: tuple = ()  # (value, low, high)
    after: tuple = ()


def _outside(out: Path, results_dir: Path) -> None:
    here, there = out.resolve(), results_dir.resolve()
    if here == there or there in here.parents or here in there.parents:
        raise RescoreError(f"--out {out}: must be a folder outside {results_dir} and not holding it (nothing in {results_dir} is written)")


def _interval(task: dict) -> tuple:
    if task["results"] is None:
        return None, None, None
    key, value = headline(task)
    return value, task["results"].get("ci_low"), task["results"].get("ci_high")


def rescore(results_dir: Path, out: Path, *, datasets: str | None = None, source_dir: Path | None = None, metric_options: dict | None = None,
            judge: JudgeOptions | None = None, label_source: str = "rules", log=print) -> tuple[dict, dict[str, TaskChange]]:  # fmt: skip
    """Rescore `results_dir` into `out` (with `judge`, also label the generated ItaP-AT answers by
    an LLM judge, whose labels the headlines use with label_source "judge"); the new results and,
    per task, what changed."""
    results_dir, out = Path(results_dir), Path(out)
    _outside(out, results_dir)
    if label_source not in ("rules", "judge") or (label_source == "judge" and judge is None):
        raise RescoreError(f"--labels {label_source}: 'rules', or 'judge' with --judge-server and --judge-model")
    try:
        results = load_results(results_dir)
        samples_path = results_dir / "samples.jsonl"
        if not samples_path.is_file():
            raise RescoreError(f"{results_dir}: no samples.jsonl: the answers to rescore are in the samples `equita run` writes")
        samples = read_samples(samples_path)
    except ResultsError as error:
        raise RescoreError(str(error)) from None
    by_task: dict[str, list[dict]] = {}
    for number, sample in enumerate(samples, 1):
        if not isinstance(sample, dict) or not isinstance(sample.get("task"), str):
            raise RescoreError(f"{samples_path} line {number}: not a sample (no task name)")
        by_task.setdefault(sample["task"], []).append(sample)
    stray = sorted(by_task.keys() - results["tasks"].keys())
    if stray:
        raise RescoreError(f"{samples_path}: holds samples of {', '.join(map(repr, stray[:3]))}, which results.json does not have")

    # Every task's answers are checked before anything is written: a refused folder leaves no trace.
    located, answers = {}, {}
    for name, task in results["tasks"].items():
        if task["results"] is None:
            continue
        eval_task = EVAL_TASKS.get(name)
        if eval_task is None:
            raise RescoreError(f"task {name!r}: this equita does not define it")
        answers[name] = _answers(name, eval_task, task, by_task.get(name, []), located, datasets, source_dir, log)
    if (out / "results.json").exists():
        raise RunError(f"--out {out}: already holds a results.json; rescore into an empty folder")
    created = check_out(out)
    with locked(out):
        try:
            earlier_replies = results_dir / "judge_requests.jsonl"
            if judge is not None and earlier_replies.is_file() and not (out / earlier_replies.name).exists():
                # The judge's replies of the run are reused (copied: RESULTS_DIR is never written).
                shutil.copyfile(earlier_replies, out / earlier_replies.name)
            return _rescore(results, by_task, answers, out, metric_options, judge, label_source, log)
        except BaseException:
            with contextlib.suppress(OSError):  # a rescoring that saved nothing leaves no folder behind
                if created and {p.name for p in out.iterdir()} <= {LOCK_FILE}:
                    shutil.rmtree(out, ignore_errors=True)
            raise


def _rescore(results, by_task, answers, out, metric_options, judge, label_source, log):
    tasks, new_samples, changes = {}, [], {}
    for name, task in results["tasks"].items():
        if task["results"] is None:
            log(f"{name}: not computed in the run ({task.get('not_computed')}): copied as it was")
            tasks[name], new_samples = task, new_samples + by_task.get(name, [])
            continue
        eval_task = EVAL_TASKS[name]
        rows, prompts, keys, responses = answers[name]
        requests = [eval_task.request(row) for row in rows]
        options = {**eval_task.metric_options, **(metric_options or {}).get(eval_task.metric, {})}
        scored = score(eval_task, rows, requests, prompts, keys, responses, options, log)
        if scored.results is None:
            raise RescoreError(f"{name}: {scored.not_computed}; give its model's options (as for `equita run`) to rescore it")
        before = {key: value for key, value in task.items() if key not in ("judge", "label_source")}
        if "judge" in task and judge is None:
            log(f"{name}: its LLM judge's labels are not carried over (they were compared with the old rules' labels); "
                "give --judge-server and --judge-model to judge again, from its cached replies")  # fmt: skip
        judge_block = None
        if judge is not None and judgeable(eval_task, requests):
            scored, judge_block = judged(eval_task, rows, requests, prompts, keys, responses, options, scored, judge, label_source,
                                         out / "judge_requests.jsonl", log)  # fmt: skip
        tasks[name] = {
            **before,
            "metric": {"name": eval_task.metric, "module_sha256": scored.module_sha256, "options": options},
            "results": scored.results,
            "not_computed": scored.not_computed,
            "timings": {**task["timings"], "metric_s": round(scored.metric_s, 3)},
            "rescored": {"module_sha256_before": task["metric"]["module_sha256"], "classifier_version_before": task["results"].get("classifier_version"),
                         "label_source_before": task.get("label_source", "rules")},  # fmt: skip
        }
        if judge_block is not None:
            tasks[name]["label_source"], tasks[name]["judge"] = label_source, judge_block
        new_samples += scored.samples
        old_labels = [s.get("label") for s in by_task[name]]
        # The moves of the labels the headline uses (the judge's, with --labels judge).
        change = TaskChange(headline=headline(task)[0], before=_interval(task), after=_interval(tasks[name]))
        change.labels.update((old, new.get("label")) for old, new in zip(old_labels, scored.samples) if old is not None or new.get("label") is not None)
        changes[name] = change

    rescored = {
        **results,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "equita": equita_provenance(),
        "tasks": tasks,
        "rescored_from": {"created": results["created"], "equita": results["equita"]},
    }
    write_atomic(out / "samples.jsonl", "".join(json.dumps(strict(s), ensure_ascii=False, allow_nan=False) + "\n" for s in new_samples))
    text = json.dumps(strict(rescored), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    write_atomic(out / "results.json", text)
    rescored = json.loads(text)
    report.write_report([rescored], out)
    return rescored, changes


def recorded_data(name: str, eval_task, recorded: dict, located: dict, datasets, source_dir, log, error=None, made="computed on",
                  again="run the model again") -> tuple[str, str, str]:  # fmt: skip
    """(where, location, revision) of the dataset copy at hand, once it is checked to be the one a
    task's answers were `made` on (`recorded`: id, config, version, revision); else `error` (a
    ValueError class) naming the task and what to do. `located` caches the copies found, by id."""
    error = error or RescoreError
    spec = eval_task.dataset
    if (recorded.get("id"), recorded.get("config"), recorded.get("version")) != (spec.id, eval_task.config, spec.version):
        raise error(f"{name}: {made} {recorded.get('id')}/{recorded.get('config')} version {recorded.get('version')}; this equita scores "
                    f"{spec.id}/{eval_task.config} version {spec.version}, whose rows differ: {again}")  # fmt: skip
    if spec.id not in located:
        located[spec.id] = data.locate(spec, datasets, source_dir, log=log)
    where, location, revision = located[spec.id]
    if not isinstance(recorded.get("revision"), str) or not _same_data(recorded["revision"], where, location, revision):
        raise error(f"{name}: {made} {spec.id} revision {str(recorded.get('revision'))[:80]}, the copy at hand is {revision}; give --datasets that copy")
    return where, location, revision


def _answers(name, eval_task, task, samples, located, datasets, source_dir, log):
    """The dataset rows, recorded prompts, keys and answers of one task, each checked to be what the run saw."""
    spec = eval_task.dataset
    where, location, revision = recorded_data(name, eval_task, task["dataset"], located, datasets, source_dir, log)
    by_id = {row["id"]: row for row in data.load_rows(eval_task.config, eval_task.split, where, location, revision)}
    if len(samples) != task["n"]:
        raise RescoreError(f"{name}: results.json says n = {task['n']}, samples.jsonl holds {len(samples)} of its samples")
    rows, prompts, keys, responses = [], [], [], []
    for sample in samples:
        who = f"{name}: sample {str(sample.get('id'))[:40]!r}"
        row = by_id.get(sample.get("id")) if isinstance(sample.get("id"), (str, int)) else None
        if row is None:
            raise RescoreError(f"{who}: not a row of {spec.id}/{eval_task.config}")
        request = eval_task.request(row)
        prompt, key, response = sample.get("prompt"), sample.get("prompt_sha256"), sample.get("response")
        if not isinstance(prompt, str) or request_key(request, prompt) != key:
            raise RescoreError(f"{who}: its prompt_sha256 is not the key of its request and prompt, so its answer is not known to be this row's")
        problem = misfit(response, request) if isinstance(response, dict) else "not an object"
        if problem:
            raise RescoreError(f"{who}: its response does not fit its request ({problem})")
        rows.append(row)
        prompts.append(prompt)
        keys.append(key)
        responses.append(response)
    return rows, prompts, keys, responses
