"""`equita run`: every selected task on one model, resumable, written as results + samples + report.

The flow is one way: dataset rows -> requests -> model answers (cached as they come) -> the
task's metric module (loaded with `evaluate.load`, as users do) -> results.json, samples.jsonl
and report.md with its plots.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

from tqdm.auto import tqdm

from .. import metrics as metric_modules
from ..builders.common import CACHE_DIR_ENV, file_in_the_way, sha256_file
from . import data
from .backends.models import cache_root, load_model, shareable
from .cache import RequestCache, request_key
from . import judge as judging
from .judge import JudgeOptions
from .requests import Generate, Loglikelihood, chat_format
from .results import contract as results_contract
from .results import report
from .results.contract import RESULTS_SCHEMA
from .tasks import EvalTask, select_tasks

METRICS_DIR = Path(metric_modules.__file__).resolve().parent
LOCK_FILE = ".equita.lock"
RUN_FILES = ("results.json", "samples.jsonl", "report.md", "requests.jsonl", LOCK_FILE)  # what a run writes in --out


class RunError(ValueError):
    """An --out that cannot be used: not writable, busy, or holding another run's results."""


def check_out(out: Path) -> bool:
    """--out must be a folder this process can write, checked before anything is loaded; whether
    this call made it."""
    try:
        return _check_out(out)
    except OSError as error:  # a name too long, a read-only or busy file system, a folder we may not list
        raise RunError(f"--out {out}: cannot be written ({error.strerror or error})") from None


def _check_out(out: Path) -> bool:
    blocked = file_in_the_way(out)
    if blocked:
        raise RunError(f"--out {out}: {blocked}")
    cache = cache_root()
    blocked = file_in_the_way(cache)
    if blocked:
        raise RunError(f"${CACHE_DIR_ENV} {cache}: {blocked}; it must be a folder equita can write (converted models, local builds)")
    for name in RUN_FILES:
        if (out / name).exists() and not (out / name).is_file():
            raise RunError(f"--out {out}: {name} is a folder (or not a file), where the run writes a file; move it away or choose another --out")
    if (out / "plots").exists() and not (out / "plots").is_dir():
        raise RunError(f"--out {out}: plots is a file, where the report writes its figures; move it away or choose another --out")
    try:
        created = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".equita-write-check."):
            pass
    except OSError as error:
        raise RunError(f"--out {out}: cannot be written ({error.strerror or error})") from None
    return created


@contextlib.contextmanager
def locked(out: Path):
    """Hold --out for this run: a second run on the same folder is refused, naming the first one's pid."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(out / LOCK_FILE, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise RunError(f"--out {out}: another equita run (pid {holder}) is writing here; wait for it to end or choose another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def earlier_run(out: Path, model_info: dict, limit: int | None) -> tuple[dict, list[dict]] | None:
    """The results and samples an earlier run left in --out, to be merged with this one's.

    Another model's results, or a run with another --limit, are never mixed with this one: the
    run is refused, and nothing is replaced. A results.json equita cannot read is refused too.
    """
    path = out / "results.json"
    if not path.exists():
        return None
    try:
        earlier = results_contract.load_results(out)
    except results_contract.ResultsError as error:
        raise RunError(f"--out {out}: holds a results.json this run would replace ({error}); move it away or choose another --out") from None
    before = (earlier["model"]["id"], earlier["model"]["revision"])
    if before != (model_info["id"], model_info["revision"]):
        # Commits are shown by their first 12 characters, unless that is where they agree.
        width = 12 if str(before[1])[:12] != str(model_info["revision"])[:12] else None
        raise RunError(f"--out {out}: holds results of model {before[0]}@{str(before[1])[:width]}, not {model_info['id']}@{str(model_info['revision'])[:width]}; "
                       "choose another --out")  # fmt: skip
    if earlier["settings"].get("limit") != limit:
        raise RunError(f"--out {out}: holds a run with --limit {earlier['settings'].get('limit')}, this one has --limit {limit}; choose another --out")
    samples_path = out / "samples.jsonl"
    try:
        samples = [json.loads(line) for line in samples_path.read_text(encoding="utf-8").splitlines() if line.strip()] if samples_path.exists() else []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunError(f"--out {out}: samples.jsonl cannot be read ({error}); move it away or choose another --out") from None
    return earlier, samples


@dataclass(frozen=True)
class RunOptions:
    model: str
    out: Path
    tasks: str = "all"
    datasets: str | None = None
    source_dir: Path | None = None
    limit: int | None = None
    batch_size: int | str = "auto"  # rows per forward pass, or "auto": measured on the first batches
    revision: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    # An OpenAI-compatible server instead of a model in this process: its base URL and settings.
    server: str | None = None
    api_key_env: str | None = None
    tokenizer: str | None = None
    concurrency: int = 8
    request_timeout: float = 120.0
    max_retries: int = 6
    # Per metric, options for compute() on top of the task's (local model paths for BERTScore and the classifier).
    metric_options: dict = field(default_factory=dict)
    # An LLM judge that also labels the generated ItaP-AT answers (runners/judge.py), and whose
    # labels the headline uses: "rules" (the classifier's, default) or "judge".
    judge: JudgeOptions | None = None
    label_source: str = "rules"


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


def strict(value):
    """`value` with every non-finite float (a log-ratio of +-inf, a NaN) as null: results files are strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(item) for item in value]
    return value


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
    """`limit` rows spread over the dataset, or `limit` whole units (a profession's sentences) for tasks with
    `limit_by`; the rows the task always keeps (`limit_keeps`) come on top, in their place."""
    always = {i for i, row in enumerate(rows) if task.limit_keeps(row)}
    counted = [i for i in range(len(rows)) if i not in always]
    if task.limit_by:
        units = list(dict.fromkeys(rows[i][task.limit_by] for i in counted))
        kept_units = {units[k] for k in data.spread(len(units), limit)}
        kept = {i for i in counted if rows[i][task.limit_by] in kept_units}
    else:
        kept = {counted[k] for k in data.spread(len(counted), limit)}
    return [row for i, row in enumerate(rows) if i in kept or i in always]


@dataclass
class Scored:
    """A task's metric output over its answers, and its samples: what `equita run` and `equita rescore` record."""

    results: dict | None  # the metric's output without its per-row values; None when not computed
    not_computed: str | None
    samples: list[dict]
    module_sha256: str
    metric_s: float


def score(task: EvalTask, rows, requests, rendered, keys, responses, metric_options: dict, log, labels: list | None = None) -> Scored:
    """Score a task's answers with its metric module, and write each row's sample; `labels`, the
    labels another reader gave (an LLM judge), are scored instead of the metric's own reading."""
    started = time.perf_counter()
    metric, metric_sha = load_metric(task.metric)
    inputs = task.metric_inputs(rows, responses)
    if labels is not None:
        inputs["labels"] = labels
    try:
        output, not_computed = metric.compute(**inputs, **metric_options), None
    except OSError as error:
        # The metric's own model (BERTScore encoder, neutrality classifier) cannot be loaded:
        # say so and go on; the answers are saved and can be scored later.
        output, not_computed = None, f"{task.metric}'s model could not be loaded: {error}"
        log(f"{task.name}: not computed: {not_computed}")
    metric_s = time.perf_counter() - started
    per_row = task.per_row(output, rows, responses) if output is not None else [{"not_computed": True} for _ in rows]
    # Each sample carries what the metric was given for its row, so anyone can score it again.
    per_row_inputs, start = [], 0
    for row in rows:
        count = task.entries(row)
        per_row_inputs.append({name: values[start] if count == 1 else values[start : start + count] for name, values in inputs.items()})
        start += count
    results = {k: v for k, v in output.items() if k not in task.per_row_keys} if output is not None else None
    return Scored(results, not_computed, _samples(task, rows, requests, rendered, keys, responses, per_row_inputs, per_row), metric_sha, metric_s)


def judgeable(task: EvalTask, requests) -> bool:
    """Whether an LLM judge reads this task's answers: generated ItaP-AT answers."""
    return task.metric == "itap_at_bias" and bool(requests) and isinstance(requests[0], Generate)


def judged(task: EvalTask, rows, requests, rendered, keys, responses, metric_options: dict, scored: Scored, judge: JudgeOptions,
           label_source: str, cache_path: Path, log) -> tuple[Scored, dict]:  # fmt: skip
    """The task labelled by the judge too: its samples keep both labels, its record both scores.

    `scored` is the rules' scoring. With label_source "judge" the task is scored again with the
    judge's labels (rows it could not label left out), and that scoring is returned; the rules'
    label and reason stay in each sample as `rules_label` and `rules_reason`.
    """
    verdicts = judging.judge_answers(judging.judge_items(task.metric_inputs(rows, responses), requests, responses), judge, cache_path,
                                     task.name, task.dataset.version, log)  # fmt: skip
    given = judging.given_labels(verdicts)
    by_judge = score(task, rows, requests, rendered, keys, responses, metric_options, log, labels=given) if any(given) else None
    record = judging.judge_record(task.name, judge, [s["label"] for s in scored.samples], verdicts, scored.results,
                                  by_judge.results if by_judge else None, log)  # fmt: skip
    chosen = scored
    if label_source == "judge":
        chosen = by_judge or not_scored(task, rows, requests, rendered, keys, "the judge gave no answer a label (see judge.agreement)", responses)
        for sample, rules in zip(chosen.samples, scored.samples):
            sample["rules_label"], sample["rules_reason"] = rules["label"], rules["reason"]
    for sample, verdict in zip(chosen.samples, verdicts):
        sample["judge_label"], sample["judge_reply"] = verdict["label"], verdict["reply"]
    return chosen, record


def not_scored(task: EvalTask, rows, requests, rendered, keys, reason: str, responses: list | None = None) -> Scored:
    """A task that could not be scored: its samples hold the prompts and the answers, if any."""
    _, metric_sha = load_metric(task.metric)
    nothing = [None] * len(rows)
    samples = _samples(task, rows, requests, rendered, keys, responses or nothing, nothing, [{"not_computed": True} for _ in rows])
    return Scored(None, reason, samples, metric_sha, 0.0)


def _samples(task: EvalTask, rows, requests, rendered, keys, responses, per_row_inputs, per_row) -> list[dict]:
    samples = []
    for row, request, text, key, response, row_input, row_score in zip(rows, requests, rendered, keys, responses, per_row_inputs, per_row, strict=True):
        sample = {"task": task.name, "id": row["id"], "group": row[task.dataset.group_by], "prompt": text}
        if isinstance(request, Loglikelihood):
            sample["continuations"] = list(request.continuations)
        samples.append({**sample, "prompt_sha256": key, "response": response, "metric_input": row_input, **row_score})
    return samples


def _prepare(tasks: list[EvalTask], options: RunOptions, log) -> list[tuple[EvalTask, data.DatasetInfo, list[dict], int]]:
    """Rows, provenance and full size of every task, before any model is loaded (a bad dataset fails fast)."""
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
        # Recorded without the user's folders (results are submitted to a public repository).
        info = data.DatasetInfo(spec.id, shareable(where), location, task.config, task.split, spec.version, revision)
        prepared.append((task, info, rows, len(loaded[(spec.id, task.config)])))
    return prepared


def run(options: RunOptions, log: Callable[[str], None] = print) -> dict:
    """Run, write results.json, samples.jsonl and the report into options.out; return the results."""
    if options.label_source not in ("rules", "judge") or (options.label_source == "judge" and options.judge is None):
        raise ValueError(f"label_source {options.label_source!r:.40}: 'rules', or 'judge' with a judge (--judge-server and --judge-model)")
    out = Path(options.out)
    created = check_out(out)
    with locked(out):  # a run refused here removes nothing: the folder and its lock are another run's
        try:
            return _run(options, out, log)
        except BaseException:
            # A run that fails before it saved anything leaves no empty folder behind; it still
            # holds the lock while it cleans up, so no other run is in the folder.
            with contextlib.suppress(OSError):
                if created and {p.name for p in out.iterdir()} <= {LOCK_FILE}:
                    shutil.rmtree(out, ignore_errors=True)
            raise


def _run(options: RunOptions, out: Path, log) -> dict:
    started = time.perf_counter()
    tasks = select_tasks(options.tasks)
    prepared = _prepare(tasks, options, log)
    load_started = time.perf_counter()
    server = None
    if options.server is not None:
        server = {"url": options.server, "api_key_env": options.api_key_env, "tokenizer": options.tokenizer,
                  "concurrency": options.concurrency, "timeout": options.request_timeout, "retries": options.max_retries, "log": log}  # fmt: skip
    model = load_model(options.model, options.revision, options.device, options.dtype, options.trust_remote_code, server=server)
    model_load_s = time.perf_counter() - load_started
    earlier = earlier_run(out, model.info.as_dict(), options.limit)
    cache = RequestCache(out / "requests.jsonl")
    for problem in cache.problems:
        log(problem)
    results = {
        "schema": RESULTS_SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "equita": equita_provenance(),
        "model": model.info.as_dict(),
        # chat_format: how chat prompts were rendered (the chat template's text), so verify can rebuild each one.
        "settings": {"tasks": [t.name for t in tasks], "limit": options.limit, "batch_size": options.batch_size, "chat_format": chat_format(model)},
        "tasks": {},
        "timings": {},
    }
    samples = []
    revision = model.info.revision
    for task, dataset, rows, rows_in_dataset in prepared:
        requests = [task.request(row) for row in rows]
        rendered = [model.render(request) for request in requests]
        keys = [request_key(request, text) for request, text in zip(requests, rendered)]
        # A backend that cannot answer this kind of request (a server without usable prompt
        # log-probabilities) leaves the task not computed, with its reason; the other tasks run.
        reason = model.cannot(requests[0]) if requests else None
        metric_options = {**task.metric_options, **options.metric_options.get(task.metric, {})}
        reported = len(cache.problems)
        answers = {key: cache.get(revision, task.name, dataset.version, key, request) for key, request in zip(keys, requests)}
        for problem in cache.problems[reported:]:
            log(f"{task.name}: {problem}")
        # Identical requests (the same prompt in two subdatasets) are answered once.
        todo = {key: request for key, request in zip(keys, requests, strict=True) if answers[key] is None}
        if reason is not None and requests and not todo:
            log(f"{task.name}: {reason}; every answer is in {cache.path.name}, so the task is scored from it")
            reason = None
        if reason is None:
            todo_keys = list(todo)
            inference_started = time.perf_counter()
            batching: dict = {}  # the batch size the backend used and, for generation, its slot utilisation
            with tqdm(total=len(answers), initial=len(answers) - len(todo), desc=task.name, unit="req", dynamic_ncols=True) as bar:
                for positions, responses in model.answer(list(todo.values()), options.batch_size, stats=batching):
                    batch = [(todo_keys[p], response) for p, response in zip(positions, responses, strict=True)]
                    cache.add(revision, task.name, dataset.version, batch)
                    answers.update(batch)
                    bar.update(len(batch))
            inference_s = time.perf_counter() - inference_started
            responses = [answers[key] for key in keys]

            scored = score(task, rows, requests, rendered, keys, responses, metric_options, log)
            judge_block = None
            if options.judge is not None and scored.results is not None and judgeable(task, requests):
                scored, judge_block = judged(task, rows, requests, rendered, keys, responses, metric_options, scored, options.judge,
                                             options.label_source, out / "judge_requests.jsonl", log)  # fmt: skip
        else:
            log(f"{task.name}: not computed: {reason}")
            todo, answers, inference_s, batching, judge_block = {}, {}, 0.0, {}, None
            scored = not_scored(task, rows, requests, rendered, keys, reason)
        samples += scored.samples
        first = requests[0]
        results["tasks"][task.name] = {
            "description": task.description,
            "dataset": dataset.as_dict(),
            "request": {"type": type(first).__name__, **{k: v for k, v in asdict(first).items() if k not in ("user", "system", "continuations")},
                        "format": "chat_template" if first.chat and model.info.chat_template else "plain"},  # fmt: skip
            "prompts_sha256": hashlib.sha256("".join(keys).encode()).hexdigest(),
            "n": len(rows),
            "rows_in_dataset": rows_in_dataset,  # n is smaller only when --limit cut the task
            "metric": {"name": task.metric, "module_sha256": scored.module_sha256, "options": metric_options},
            "results": scored.results,
            "not_computed": scored.not_computed,
            "timings": {
                "requests": len(answers),
                "cached": len(answers) - len(todo),
                "computed": len(todo),
                "inference_s": round(inference_s, 3),
                "requests_per_s": round(len(todo) / inference_s, 3) if todo and inference_s > 0 else None,
                "metric_s": round(scored.metric_s, 3),
                **batching,
            },
        }
        if judge_block is not None:
            results["tasks"][task.name]["label_source"] = options.label_source
            results["tasks"][task.name]["judge"] = judge_block
    if earlier is not None:
        # The same model in the same folder: keep the tasks this run did not redo, and say so.
        previous, previous_samples = earlier
        # A task this run could not compute (a server check that failed once) never replaces a computed one.
        failed = [name for name, task in results["tasks"].items() if task["results"] is None and (previous["tasks"].get(name) or {}).get("results") is not None]
        for name in failed:
            log(f"{name}: kept the earlier computed result; this run could not compute it ({results['tasks'][name]['not_computed']})")
        results["tasks"] = {name: task for name, task in results["tasks"].items() if name not in failed}
        samples = [s for s in samples if s["task"] not in failed]
        kept = [name for name in previous["tasks"] if name not in results["tasks"]]
        redone = [name for name in previous["tasks"] if name in results["tasks"]]
        if kept or redone:
            log(f"{out}/results.json already held {', '.join(previous['tasks'])}: "
                + (f"kept {', '.join(kept)}" if kept else "nothing kept") + (f"; replaced {', '.join(redone)}" if redone else ""))  # fmt: skip
        results["tasks"] = {**{name: previous["tasks"][name] for name in kept}, **results["tasks"]}
        results["settings"]["tasks"] = list(results["tasks"])
        samples = [s for s in previous_samples if s.get("task") in kept] + samples
    results["timings"] = {"model_load_s": round(model_load_s, 3), "total_s": round(time.perf_counter() - started, 3)}
    write_atomic(out / "samples.jsonl", "".join(json.dumps(strict(s), ensure_ascii=False, allow_nan=False) + "\n" for s in samples))
    text = json.dumps(strict(results), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    results = json.loads(text)  # what is returned is exactly what the file holds (lists, not tuples)
    write_atomic(out / "results.json", text)
    report.write_report([results], out)
    return results
