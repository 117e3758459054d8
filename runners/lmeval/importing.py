"""`equita import lm-eval`: an lm-eval run of the exported tasks as an equita results folder.

`lm_eval --include_path DIR --tasks equita_bias --apply_chat_template --log_samples
--output_path OUT` writes `results_<date>.json` and one `samples_<task>_<date>.jsonl` per task.
Importing reads them as `equita rescore` reads a results folder: each task must be one equita
exported (its YAML's `metadata.equita`), on this equita's dataset version and the revision at
hand, with a sample for every row it ran; each sample's document must be the dataset's row, its
prompt the prompt `equita run` renders (raw text, or the chat template lm-eval recorded), and its
answer one that fits the request. The answers are then scored by `run.score`, as `equita run`
scores them, and written as results.json, samples.jsonl and report.md, with lm-eval's version,
model arguments and the dataset revisions as provenance.

The rows lm-eval ran must be all of a task's rows or the rows `equita run --limit N` takes (lm-eval
`--samples DIR/samples-limit-N.json` from `equita export lm-eval --limit N`), so that
`equita verify` can check the selection as it checks a run's.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from .. import data
from ..backends.models import shareable
from ..cache import misfit, request_key
from ..hub.publish import _without_local_paths
from ..requests import CannotRender, Generate, render_recorded
from ..results import report
from ..results.contract import RESULTS_SCHEMA
from ..results.rescore import recorded_data
from ..run import LOCK_FILE, RunError, check_out, equita_provenance, limited, locked, score, strict, write_atomic
from ..tasks import EVAL_TASKS
from .export import metric_names

MAX_RESULTS_BYTES = 64 * 2**20
MAX_SAMPLE_LINE = 8 * 2**20


class LmEvalImportError(ValueError):
    """An lm-eval output that cannot be imported; the message says which file, task or sample, and why."""


def _results_file(output_path: Path) -> Path:
    if output_path.is_file():
        if not re.fullmatch(r"results_.+\.json", output_path.name):
            raise LmEvalImportError(f"{output_path}: not an lm-eval results_<date>.json")
        return output_path
    if not output_path.is_dir():
        raise LmEvalImportError(f"{output_path}: no such file or folder")
    found = sorted(output_path.glob("results_*.json")) or sorted(output_path.glob("*/results_*.json"))
    if not found:
        raise LmEvalImportError(f"{output_path}: no results_*.json; give the --output_path of `lm_eval ... --log_samples`")
    if len(found) > 1:
        names = ", ".join(str(path.relative_to(output_path)) for path in found[:4])
        raise LmEvalImportError(f"{output_path}: holds {len(found)} lm-eval runs ({names}{', ...' if len(found) > 4 else ''}); give the results file of one")
    return found[0]


def _read_json(path: Path) -> dict:
    if path.stat().st_size > MAX_RESULTS_BYTES:
        raise LmEvalImportError(f"{path}: over {MAX_RESULTS_BYTES // 2**20} MiB, not an lm-eval results file")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LmEvalImportError(f"{path}: not JSON ({error})") from None
    if not isinstance(value, dict) or not isinstance(value.get("configs"), dict) or not isinstance(value.get("config"), dict):
        raise LmEvalImportError(f"{path}: not an lm-eval results file (no configs and config)")
    return value


def _samples(path: Path) -> list[dict]:
    samples = []
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            if len(line) > MAX_SAMPLE_LINE:
                raise LmEvalImportError(f"{path} line {number}: over {MAX_SAMPLE_LINE // 2**20} MiB")
            try:
                sample = json.loads(line)
            except json.JSONDecodeError as error:
                raise LmEvalImportError(f"{path} line {number}: not JSON ({error})") from None
            if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
                raise LmEvalImportError(f"{path} line {number}: not an lm-eval sample (no doc)")
            samples.append(sample)
    return samples


def _model_args(config: dict) -> dict:
    """lm-eval's model arguments, given as a dict or as its `key=value,key=value` string."""
    given = config.get("model_args")
    if isinstance(given, dict):
        return given
    if isinstance(given, str):
        return dict(part.split("=", 1) for part in given.split(",") if "=" in part)
    return {}


def _model_info(record: dict, chat: bool) -> dict:
    config = record["config"]
    args = _model_args(config)
    pretrained = str(args.get("pretrained") or record.get("model_name") or "unknown")
    # A local folder is named by its last part only (results are public); a Hub id stays.
    looks_local = pretrained.startswith(("/", "~", ".")) or "\\" in pretrained or pretrained.count("/") > 1
    model_id = Path(pretrained).name if looks_local else pretrained
    revision = next((str(v) for v in (args.get("revision"), config.get("model_sha")) if isinstance(v, str) and re.fullmatch(r"[0-9a-f]{40}", v)), None)
    if revision is None:
        # lm-eval did not record a pinned commit: the leaderboard marks such a revision.
        revision = "unpinned-lm-eval:" + hashlib.sha256(json.dumps([model_id, config.get("model_num_parameters")]).encode()).hexdigest()[:16]
    dtype = str(args.get("dtype") or config.get("model_dtype") or "auto").removeprefix("torch.")
    parameters = config.get("model_num_parameters")
    return {
        "id": model_id, "source": f"lm-eval:{config.get('model')}", "revision": revision, "path": model_id, "dtype": dtype,
        "device": str(config.get("device") or "unknown"), "chat_template": chat,
        "trust_remote_code": str(args.get("trust_remote_code", "")).lower() == "true",
        "parameters": parameters if isinstance(parameters, int) and not isinstance(parameters, bool) and parameters >= 0 else None,
        "backend": "lm-eval",
    }  # fmt: skip


def _chat_format(record: dict) -> dict:
    """How lm-eval rendered chat prompts, as `settings.chat_format` records it for verify."""
    template = record.get("chat_template")
    if not isinstance(template, str):
        return {"format": "plain"}
    special = {}
    for name in ("bos_token", "eos_token", "pad_token"):
        value = record.get(f"tokenizer_{name}")
        if isinstance(value, list) and value and isinstance(value[0], str):
            special[name] = value[0]
    return {"format": "chat_template", "template": template, "template_sha256": hashlib.sha256(template.encode()).hexdigest(), "special_tokens": special}


def _response(sample: dict, request, who: str) -> dict:
    answers = sample.get("filtered_resps")
    if isinstance(request, Generate):
        if not (isinstance(answers, list) and len(answers) == 1 and isinstance(answers[0], str)):
            raise LmEvalImportError(f"{who}: filtered_resps is not one generated text")
        return {"text": answers[0]}
    if not (isinstance(answers, list) and len(answers) == len(request.continuations)):
        raise LmEvalImportError(f"{who}: filtered_resps holds {len(answers) if isinstance(answers, list) else 'no'} log-likelihoods for {len(request.continuations)} continuations")
    logprobs, greedy = [], []
    for answer in answers:
        # lm-eval writes each (log-likelihood, is-greedy) pair as text: "-9.0195...", "False".
        try:
            value = float(answer[0])
        except (TypeError, ValueError, IndexError):
            raise LmEvalImportError(f"{who}: {str(answer)[:60]!r} is not a log-likelihood") from None
        flag = answer[1] if len(answer) > 1 else None
        if flag not in (True, False, "True", "False"):
            raise LmEvalImportError(f"{who}: {str(flag)[:20]!r} is not a greedy flag")
        if not math.isfinite(value) and value != -math.inf:
            raise LmEvalImportError(f"{who}: log-likelihood {value} is not a number")
        logprobs.append(value)
        greedy.append(flag in (True, "True"))
    return {"logprobs": logprobs, "greedy": greedy}


def _prompt(sample: dict, request, who: str) -> str:
    arguments = sample.get("arguments")
    if not isinstance(arguments, dict) or not arguments:
        raise LmEvalImportError(f"{who}: no arguments (the prompt lm-eval sent)")
    calls = [arguments.get(f"gen_args_{i}") for i in range(len(arguments))]
    if not all(isinstance(call, dict) and isinstance(call.get("arg_0"), str) for call in calls):
        raise LmEvalImportError(f"{who}: arguments are not lm-eval's gen_args_N")
    contexts = {call["arg_0"] for call in calls}
    if len(contexts) != 1:
        raise LmEvalImportError(f"{who}: its requests have different prompts")
    if not isinstance(request, Generate) and [call.get("arg_1") for call in calls] != list(request.continuations):
        raise LmEvalImportError(f"{who}: the continuations lm-eval scored are not the row's")
    return contexts.pop()


def _selection(name: str, task, rows: list[dict], ids: list) -> int | None:
    """The --limit whose rows these are (None: all rows); refused when equita would take other rows."""
    if len(ids) == len(rows):
        return None
    kept = {i for i, row in enumerate(rows) if task.limit_keeps(row)}
    counted = [row for i, row in enumerate(rows) if i not in kept and row["id"] in set(ids)]
    limit = len({row[task.limit_by] for row in counted}) if task.limit_by else len(counted)
    if limit and [row["id"] for row in limited(task, rows, limit)] == ids:
        return limit
    raise LmEvalImportError(f"{name}: lm-eval ran {len(ids)} of its {len(rows)} rows, which are not the rows `equita run --limit` takes; "
                       "run lm-eval with --samples FILE from `equita export lm-eval --limit N` (lm-eval's own --limit takes the first rows)")  # fmt: skip


def import_lm_eval(output_path: Path, out: Path, *, datasets: str | None = None, source_dir: Path | None = None, metric_options: dict | None = None,
                   log=print) -> dict:  # fmt: skip
    """Write the results folder `out` from lm-eval's output; return the results."""
    results_path = _results_file(Path(output_path))
    record = _read_json(results_path)
    stamp = results_path.name.removeprefix("results_").removesuffix(".json")
    ours = {name: config for name, config in record["configs"].items()
            if isinstance(config, dict) and isinstance((config.get("metadata") or {}).get("equita"), dict)}  # fmt: skip
    others = sorted(set(record["configs"]) - set(ours))
    if not ours:
        raise LmEvalImportError(f"{results_path}: no equita task ({', '.join(others[:5]) or 'no task'}); run the tasks `equita export lm-eval` writes")
    if others:
        log(f"left out (not equita tasks): {', '.join(others)}")
    if record.get("system_instruction"):
        raise LmEvalImportError(f"{results_path}: lm-eval ran with --system_instruction, which replaces equita's system prompts")
    chat_format = _chat_format(record)
    counts = record.get("n-samples") if isinstance(record.get("n-samples"), dict) else {}

    located, prepared, limits = {}, [], {}
    for lm_name, config in ours.items():
        meta = config["metadata"]["equita"]
        name = meta.get("task")
        task = EVAL_TASKS.get(name) if isinstance(name, str) else None
        if task is None:
            raise LmEvalImportError(f"{lm_name}: metadata.equita.task {str(name)[:40]!r} is not a task of this equita")
        spec, recorded = task.dataset, meta.get("dataset") if isinstance(meta.get("dataset"), dict) else {}
        where, location, revision = recorded_data(lm_name, task, recorded, located, datasets, source_dir, log, error=LmEvalImportError,
                                                  made="exported for", again="export the tasks again and rerun lm-eval")  # fmt: skip
        samples_path = results_path.parent / f"samples_{lm_name}_{stamp}.jsonl"
        if not samples_path.is_file():
            raise LmEvalImportError(f"{lm_name}: no {samples_path.name}; run lm_eval with --log_samples (the answers are in the samples)")
        samples = _samples(samples_path)
        effective = (counts.get(lm_name) or {}).get("effective") if isinstance(counts.get(lm_name), dict) else None
        if effective is not None and effective != len(samples):
            raise LmEvalImportError(f"{lm_name}: lm-eval scored {effective} documents, {samples_path.name} holds {len(samples)}")
        all_rows = data.load_rows(task.config, task.split, where, location, revision)
        by_id = {row["id"]: row for row in all_rows}
        seen = set()
        for sample in samples:
            doc_id = sample["doc"].get("id")
            who = f"{lm_name}: sample {sample.get('doc_id')!s:.20}"
            if not isinstance(doc_id, (str, int)) or doc_id not in by_id:
                raise LmEvalImportError(f"{who}: its doc is not a row of {spec.id}/{task.config}")
            if json.loads(json.dumps(by_id[doc_id])) != sample["doc"]:
                raise LmEvalImportError(f"{who}: its doc differs from row {doc_id} of {spec.id}/{task.config}")
            if doc_id in seen:
                raise LmEvalImportError(f"{who}: row {doc_id} appears twice")
            seen.add(doc_id)
        order = {row["id"]: i for i, row in enumerate(all_rows)}
        samples.sort(key=lambda sample: order[sample["doc"]["id"]])
        ids = [sample["doc"]["id"] for sample in samples]
        limits[lm_name] = _selection(lm_name, task, all_rows, ids)
        rows, requests, prompts, responses = [], [], [], []
        for sample in samples:
            row = by_id[sample["doc"]["id"]]
            request = task.request(row)
            who = f"{lm_name}: row {row['id']}"
            prompt = _prompt(sample, request, who)
            try:
                expected = render_recorded(request, chat_format)
            except CannotRender as error:
                raise LmEvalImportError(f"{who}: its chat prompt cannot be rendered again ({error})") from None
            if prompt != expected:
                at = next((i for i, (a, b) in enumerate(zip(prompt, expected)) if a != b), min(len(prompt), len(expected)))
                how = "with lm-eval's recorded chat template" if chat_format["format"] == "chat_template" else "in equita's plain layout (no --apply_chat_template)"
                raise LmEvalImportError(f"{who}: its prompt is not the one equita renders {how}; they part at character {at}: "
                                   f"{prompt[at:at + 30]!r} vs {expected[at:at + 30]!r}")  # fmt: skip
            response = _response(sample, request, who)
            problem = misfit(response, request)
            if problem:
                raise LmEvalImportError(f"{who}: its answer does not fit its request ({problem})")
            rows.append(row), requests.append(request), prompts.append(prompt), responses.append(response)
        info = data.DatasetInfo(spec.id, shareable(where), location, task.config, task.split, spec.version, revision)
        prepared.append((lm_name, task, info, rows, requests, prompts, responses, len(all_rows)))
    prepared.sort(key=lambda item: list(EVAL_TASKS).index(item[1].name))  # equita's task order, not lm-eval's
    if len(set(limits.values())) > 1:
        raise LmEvalImportError("the tasks ran on different row selections (" + ", ".join(f"{k}: --limit {v}" for k, v in limits.items()) + "); "
                           "equita results hold one --limit: import them separately")  # fmt: skip
    if chat_format["format"] == "plain" and any(request.chat for _, _, _, _, requests, _, _, _ in prepared for request in requests[:1]):
        log("lm-eval ran without --apply_chat_template: chat prompts are in equita's plain layout, as for a model without a chat template")

    out = Path(out)
    if (out / "results.json").exists():
        raise RunError(f"--out {out}: already holds a results.json; import into an empty folder")
    created = check_out(out)
    with locked(out):
        try:
            return _write(record, results_path, prepared, limits, chat_format, out, metric_options or {}, log)
        except BaseException:
            if created and {p.name for p in out.iterdir()} <= {LOCK_FILE}:
                shutil.rmtree(out, ignore_errors=True)
            raise


def _write(record, results_path, prepared, limits, chat_format, out, metric_options, log) -> dict:
    tasks, samples, differences = {}, [], []
    for lm_name, task, info, rows, requests, prompts, responses, rows_in_dataset in prepared:
        keys = [request_key(request, prompt) for request, prompt in zip(requests, prompts)]
        options = {**task.metric_options, **metric_options.get(task.metric, {})}
        scored = score(task, rows, requests, prompts, keys, responses, options, log)
        reported = (record.get("results") or {}).get(lm_name) or {}
        for name in metric_names(task.name):
            theirs, ours = reported.get(f"{name},none"), (scored.results or {}).get(name)
            if isinstance(theirs, (int, float)) and isinstance(ours, (int, float)) and not math.isclose(theirs, ours, rel_tol=1e-9, abs_tol=1e-12):
                differences.append(f"{task.name}.{name}: lm-eval reported {theirs}, equita computes {ours}")
        samples += scored.samples
        first = requests[0]
        tasks[task.name] = {
            "description": task.description,
            "dataset": info.as_dict(),
            "request": {"type": type(first).__name__, **{k: v for k, v in asdict(first).items() if k not in ("user", "system", "continuations")},
                        "format": "chat_template" if first.chat and chat_format["format"] == "chat_template" else "plain"},  # fmt: skip
            "prompts_sha256": hashlib.sha256("".join(keys).encode()).hexdigest(),
            "n": len(rows),
            "rows_in_dataset": rows_in_dataset,
            "metric": {"name": task.metric, "module_sha256": scored.module_sha256, "options": options},
            "results": scored.results,
            "not_computed": scored.not_computed,
            "timings": {"requests": len(rows), "cached": 0, "computed": len(rows), "inference_s": None, "requests_per_s": None,
                        "metric_s": round(scored.metric_s, 3)},  # fmt: skip
        }
    for line in differences:
        log(f"warning: {line}")
    config = record["config"]
    elapsed = record.get("total_evaluation_time_seconds")
    results = {
        "schema": RESULTS_SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "equita": equita_provenance(),
        "model": _model_info(record, chat_format["format"] == "chat_template"),
        "settings": {"tasks": list(tasks), "limit": next(iter(limits.values())), "batch_size": str(config.get("batch_size")), "chat_format": chat_format},
        "tasks": tasks,
        "timings": {"model_load_s": None, "total_s": float(elapsed) if isinstance(elapsed, (int, float, str)) and _number(elapsed) else None},
        "imported_from": _without_local_paths({
            "tool": "lm-eval", "version": record.get("lm_eval_version"), "git_hash": record.get("git_hash"), "model": config.get("model"),
            "model_args": _model_args(config), "batch_size": config.get("batch_size"), "device": config.get("device"),
            "apply_chat_template": chat_format["format"] == "chat_template", "chat_template_sha": record.get("chat_template_sha"),
            "transformers_version": record.get("transformers_version"), "date": record.get("date"), "results_file": results_path.name,
            "task_hashes": record.get("task_hashes"), "differences": differences,
        }),  # fmt: skip
    }
    write_atomic(out / "samples.jsonl", "".join(json.dumps(strict(s), ensure_ascii=False, allow_nan=False) + "\n" for s in samples))
    text = json.dumps(strict(results), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    write_atomic(out / "results.json", text)
    results = json.loads(text)
    report.write_report([results], out)
    return results


def _number(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
