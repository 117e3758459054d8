"""`equita run`: every selected task on one model, resumable, written as results + samples + report.

The flow is one way: dataset rows -> requests -> model answers (cached as they come) -> the
task's metric module (loaded with `evaluate.load`, as users do) -> results.json, samples.jsonl
and report.md with its plots.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

from tqdm.auto import tqdm

import equita.metrics
from equita.builders.common import sha256_file
from equita.runners import data, report
from equita.runners.cache import RequestCache, request_key
from equita.runners.models import load_model
from equita.runners.report import RESULTS_SCHEMA
from equita.runners.requests import Loglikelihood
from equita.runners.tasks import EvalTask, select_tasks

METRICS_DIR = Path(equita.metrics.__file__).resolve().parent


@dataclass(frozen=True)
class RunOptions:
    model: str
    out: Path
    tasks: str = "all"
    datasets: str | None = None
    source_dir: Path | None = None
    limit: int | None = None
    batch_size: int = 16
    revision: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    # Per metric, options for compute() on top of the task's (local model paths for BERTScore and the classifier).
    metric_options: dict = field(default_factory=dict)


def metric_code_sha256(folder: Path) -> str:
    """One sha256 over every Python file of a metric module (the module and the siblings it imports)."""
    lines = "".join(f"{path.name} {sha256_file(path)}\n" for path in sorted(folder.glob("*.py")) if path.name != "app.py")
    return hashlib.sha256(lines.encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def load_metric(name: str):
    """The metric module from the project's folder, by absolute path (a relative one that does
    not exist would be taken for a Hub id), with the sha256 of its code for the record."""
    import evaluate

    folder = METRICS_DIR / name
    return evaluate.load(str(folder)), metric_code_sha256(folder)


def equita_provenance() -> dict:
    """Package version, and the git commit (and whether it had local changes) when running from a checkout."""
    try:
        version = metadata.version("equita")
    except metadata.PackageNotFoundError:
        version = None
    git = dirty = None
    checkout = METRICS_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / ".git").exists():  # editable install of a clone
        try:
            git = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True).stdout.strip()
            status = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=5, check=True).stdout  # fmt: skip
            dirty = bool(status.strip())
        except (OSError, subprocess.SubprocessError):
            git = dirty = None
    return {"version": version, "git": git, "git_dirty": dirty}


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` only once the new content is complete on disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; results are meant to be shared
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def limited(task: EvalTask, rows: list[dict], limit: int | None) -> list[dict]:
    """`limit` rows spread over the dataset, or `limit` whole units (a profession's sentences) for tasks with `limit_by`."""
    if task.limit_by:
        units = list(dict.fromkeys(row[task.limit_by] for row in rows))
        kept = {units[i] for i in data.spread(len(units), limit)}
        return [row for row in rows if row[task.limit_by] in kept]
    return [rows[i] for i in data.spread(len(rows), limit)]


def _prepare(tasks: list[EvalTask], options: RunOptions, log) -> list[tuple[EvalTask, data.DatasetInfo, list[dict]]]:
    """Rows and provenance of every task, before any model is loaded (a bad dataset fails fast)."""
    located: dict[str, tuple[str, str, str]] = {}
    loaded: dict[tuple[str, str], list[dict]] = {}
    prepared = []
    for task in tasks:
        spec = task.dataset
        if spec.id not in located:
            located[spec.id] = data.locate(spec, options.datasets, options.source_dir, log=log)
        where, location, revision = located[spec.id]
        if (spec.id, task.config) not in loaded:
            loaded[(spec.id, task.config)] = data.load_rows(task.config, task.split, where, location, revision)
        rows = limited(task, loaded[(spec.id, task.config)], options.limit)
        info = data.DatasetInfo(spec.id, where, location, task.config, task.split, spec.version, revision)
        prepared.append((task, info, rows))
    return prepared


def run(options: RunOptions, log: Callable[[str], None] = print) -> dict:
    """Run, write results.json, samples.jsonl and the report into options.out; return the results."""
    started = time.perf_counter()
    tasks = select_tasks(options.tasks)
    prepared = _prepare(tasks, options, log)
    load_started = time.perf_counter()
    model = load_model(options.model, options.revision, options.device, options.dtype, options.trust_remote_code)
    model_load_s = time.perf_counter() - load_started
    out = Path(options.out)
    cache = RequestCache(out / "requests.jsonl")
    for problem in cache.problems:
        log(problem)
    results = {
        "schema": RESULTS_SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "equita": equita_provenance(),
        "model": model.info.as_dict(),
        "settings": {"tasks": [t.name for t in tasks], "limit": options.limit, "batch_size": options.batch_size},
        "tasks": {},
        "timings": {},
    }
    samples = []
    revision = model.info.revision
    for task, dataset, rows in prepared:
        requests = [task.request(row) for row in rows]
        rendered = [model.render(request) for request in requests]
        keys = [request_key(request, text) for request, text in zip(requests, rendered)]
        answers = {key: cache.get(revision, task.name, dataset.version, key) for key in keys}
        # Identical requests (the same prompt in two subdatasets) are answered once.
        todo = {key: request for key, request in zip(keys, requests, strict=True) if answers[key] is None}
        todo_keys = list(todo)
        inference_started = time.perf_counter()
        with tqdm(total=len(answers), initial=len(answers) - len(todo), desc=task.name, unit="req", dynamic_ncols=True) as bar:
            for positions, responses in model.answer(list(todo.values()), options.batch_size):
                batch = [(todo_keys[p], response) for p, response in zip(positions, responses, strict=True)]
                cache.add(revision, task.name, dataset.version, batch)
                answers.update(batch)
                bar.update(len(batch))
        inference_s = time.perf_counter() - inference_started
        responses = [answers[key] for key in keys]

        metric_started = time.perf_counter()
        metric, metric_sha = load_metric(task.metric)
        inputs = task.metric_inputs(rows, responses)
        metric_options = {**task.metric_options, **options.metric_options.get(task.metric, {})}
        try:
            scored, not_computed = metric.compute(**inputs, **metric_options), None
        except OSError as error:
            # The metric's own model (BERTScore encoder, neutrality classifier) cannot be loaded:
            # say so and go on; the answers are saved and can be scored later.
            scored, not_computed = None, f"{task.metric}'s model could not be loaded: {error}"
            log(f"{task.name}: not computed: {not_computed}")
        metric_s = time.perf_counter() - metric_started
        per_row = task.per_row(scored, rows, responses) if scored is not None else [{"not_computed": True} for _ in rows]

        # Each sample carries what the metric was given for its row, so anyone can score it again.
        per_row_inputs, start = [], 0
        for row in rows:
            count = task.entries(row)
            per_row_inputs.append({name: values[start] if count == 1 else values[start : start + count] for name, values in inputs.items()})
            start += count
        for row, request, text, key, response, row_input, row_score in zip(
            rows, requests, rendered, keys, responses, per_row_inputs, per_row, strict=True
        ):
            sample = {"task": task.name, "id": row["id"], "group": row[task.dataset.group_by], "prompt": text}
            if isinstance(request, Loglikelihood):
                sample["continuations"] = list(request.continuations)
            samples.append({**sample, "prompt_sha256": key, "response": response, "metric_input": row_input, **row_score})
        first = requests[0]
        results["tasks"][task.name] = {
            "description": task.description,
            "dataset": dataset.as_dict(),
            "request": {"type": type(first).__name__, **{k: v for k, v in asdict(first).items() if k not in ("user", "system", "continuations")},
                        "format": "chat_template" if first.chat and model.info.chat_template else "plain"},  # fmt: skip
            "prompts_sha256": hashlib.sha256("".join(keys).encode()).hexdigest(),
            "n": len(rows),
            "metric": {"name": task.metric, "module_sha256": metric_sha, "options": metric_options},
            "results": {k: v for k, v in scored.items() if k not in task.per_row_keys} if scored is not None else None,
            "not_computed": not_computed,
            "timings": {
                "requests": len(answers),
                "cached": len(answers) - len(todo),
                "computed": len(todo),
                "inference_s": round(inference_s, 3),
                "requests_per_s": round(len(todo) / inference_s, 3) if todo and inference_s > 0 else None,
                "metric_s": round(metric_s, 3),
            },
        }
    results["timings"] = {"model_load_s": round(model_load_s, 3), "total_s": round(time.perf_counter() - started, 3)}
    write_atomic(out / "samples.jsonl", "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples))
    text = json.dumps(results, ensure_ascii=False, indent=2) + "\n"
    results = json.loads(text)  # what is returned is exactly what the file holds (lists, not tuples)
    write_atomic(out / "results.json", text)
    report.write_report([results], out)
    return results
