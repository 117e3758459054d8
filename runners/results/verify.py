"""`equita verify`: score a results folder again from its own samples and check every number.

results.json says what a model scored; samples.jsonl says, row by row, what it was asked and
what it answered. Verification rebuilds each request from the dataset the results name, renders
it as the run did (raw text; the chat template recorded in settings.chat_format; or, for a
server run without --tokenizer, the messages it was sent), checks that this is the sample's
prompt whole (the cache key binds request and rendered prompt), feeds
the recorded answers to the task's metric module again and compares every value. The model is
never run: its answers are taken as given, and what is checked is that the scores follow from
them on that data. Results files come from other people, so nothing here trusts them: a bad
file is a one-line `VerifyError`, and a wrong number is a listed problem.

Statuses, per task of results.json:
- "verified": every check passed;
- "mismatch": something recorded is not what the samples, the dataset and the metric give;
- "not verifiable": the means to check are not at hand (an unknown task, the dataset at another
  revision, the metric's own model, options that name a model of the run's machine, chat prompts
  of a run that recorded no chat template);
- "not computed": the run recorded no results for the task (nothing to check).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from importlib import metadata
from pathlib import Path

from .. import data
from .. import judge as judging
from ..cache import misfit, request_key
from ..requests import CannotRender, Loglikelihood, messages, render_recorded
from . import contract as results_contract
from .contract import ResultsError, load_results, validate_results
from ..run import limited, load_metric, strict
from ..tasks import EVAL_TASKS

VERIFIED, MISMATCH, NOT_VERIFIABLE, NOT_COMPUTED = "verified", "mismatch", "not verifiable", "not computed"
SAMPLE_FIELDS = ("id", "prompt", "prompt_sha256", "response", "metric_input")
SHOWN = 5  # differences listed per check; the rest are counted
ABSENT = object()  # a key one side has and the other lacks


class VerifyError(Exception):
    """Input that cannot be verified at all (no samples, a broken line); the message says what and where."""


def equita_version() -> str | None:
    try:
        return metadata.version("equita")
    except metadata.PackageNotFoundError:
        return None


def read_samples(folder: Path) -> list[dict]:
    """The samples of a results folder (the results contract's reader), a VerifyError when it has none or they are not samples."""
    path = Path(folder) / "samples.jsonl"
    if not path.is_file():
        raise VerifyError(f"{folder}: no samples.jsonl (the per-row answers `equita run` writes next to results.json)")
    try:
        return results_contract.read_samples(path)
    except ResultsError as error:
        raise VerifyError(str(error)) from None


def verify_folder(folder: Path, **options) -> dict:
    """verify_results on a results folder of `equita run` (results.json and samples.jsonl)."""
    try:
        results = load_results(Path(folder))
    except ResultsError as error:
        raise VerifyError(str(error)) from None
    return verify_results(results, read_samples(folder), **options)


def verify_results(results: dict, samples: list[dict], *, datasets: str | None = None, source_dir: Path | None = None, log=print) -> dict:
    """Check every task of `results` against `samples`, the datasets (located as the runner does:
    `datasets` and `source_dir` mean what they mean for `equita run`) and the metric modules.

    Returns {"verified": every computed task verified, "tasks": {name: {"status", "problems"}}, "equita": version}.
    """
    if not isinstance(results, dict):
        raise VerifyError(f"results: not a JSON object (a {type(results).__name__})")
    # A submitted record (what the leaderboard reads) is a results.json without the run's timings.
    problems = validate_results({"timings": {}, **results})
    if problems:
        raise VerifyError(f"results do not follow the results schema: {'; '.join(problems[:3])}")
    by_task: dict[str, list[dict]] = {}
    for number, sample in enumerate(samples, 1):
        if not isinstance(sample, dict):
            raise VerifyError(f"sample {number}: not a JSON object (a {type(sample).__name__})")
        if not isinstance(sample.get("task"), str):
            raise VerifyError(f"sample {number}: no task name (its 'task' is {sample.get('task')!r:.40})")
        by_task.setdefault(sample["task"], []).append(sample)
    found: dict = {}

    def dataset(eval_task) -> tuple[str, str, str, list[dict]]:
        """(where, location, revision, rows) of a task's dataset, located as the runner does; each once."""
        spec = eval_task.dataset
        if spec.id not in found:
            found[spec.id] = data.locate(spec, datasets, source_dir, log=log)
        if (spec.id, eval_task.config) not in found:
            found[(spec.id, eval_task.config)] = data.load_rows(eval_task.config, eval_task.split, *found[spec.id])
        return (*found[spec.id], found[(spec.id, eval_task.config)])

    # How the run rendered its chat prompts, and whether a server (which records the messages it sent) ran them.
    chat_format = results["settings"].get("chat_format")
    rendering = {"chat_format": chat_format, "server": results["model"].get("backend") == "openai-server",
                 "dated": isinstance(chat_format, dict) and "strftime_now" in str(chat_format.get("template"))}  # fmt: skip
    report = {}
    for name, task in results["tasks"].items():
        report[name] = _verify_task(name, task, by_task.get(name, []), results["settings"].get("limit"), dataset, rendering)
    for name in by_task.keys() - results["tasks"].keys():
        report[name] = {"status": MISMATCH, "problems": [f"the samples hold task {name!r:.60} ({len(by_task[name])} of them), which the results do not have"]}
    verified = all(entry["status"] in (VERIFIED, NOT_COMPUTED) for entry in report.values())
    return {"verified": verified, "tasks": report, "equita": equita_version()}


def _verify_task(name: str, task: dict, samples: list[dict], limit, dataset, rendering: dict) -> dict:
    """Status and problems of one task; `limit` is the run's --limit, `dataset(eval_task)` the data at hand,
    `rendering` how the run rendered chat prompts (see verify_results)."""
    eval_task = EVAL_TASKS.get(name)
    if eval_task is None:
        return _entry([], [f"unknown task {name!r}: this equita ({equita_version()}) does not define it"], [])
    if task["results"] is None:
        return {"status": NOT_COMPUTED, "problems": [f"not computed: {task.get('not_computed')}"]}
    mismatches, notes = [], []  # what is wrong; what explains a difference (a changed metric)

    # 1. The samples of the task: as many as n, each row once, each with what a sample holds.
    if len(samples) != task["n"]:
        mismatches.append(f"n is {task['n']} but samples.jsonl holds {len(samples)} samples of {name}")
    incomplete = [f"sample {i + 1} of {name}: missing {', '.join(k for k in SAMPLE_FIELDS if k not in s)}" for i, s in enumerate(samples) if any(k not in s for k in SAMPLE_FIELDS)]
    bad_ids = [f"sample {i + 1} of {name}: id {s.get('id')!r:.40} is not a row id" for i, s in enumerate(samples) if not _is_id(s.get("id"))]
    if incomplete or bad_ids:
        return _entry(mismatches + _capped(incomplete + bad_ids), [], [])
    ids = [s["id"] for s in samples]
    repeated = sorted((i for i, count in Counter(ids).items() if count > 1), key=str)
    if repeated:
        mismatches.append(f"sample ids appear more than once: {', '.join(map(_show, repeated[:SHOWN]))}" + _more(repeated))

    # 2. The data: the dataset the results name, at the revision they were computed on.
    recorded = task["dataset"]
    spec = eval_task.dataset
    expected = {"id": spec.id, "config": eval_task.config, "split": eval_task.split, "version": spec.version}
    differing = [f"{key} {recorded.get(key)!r:.40} recorded, {value!r} here" for key, value in expected.items() if recorded.get(key) != value]
    if differing:
        return _entry(mismatches, [f"dataset: {'; '.join(differing)} (another equita's data)"], [])
    try:
        where, location, revision, all_rows = dataset(eval_task)
    except (data.DatasetError, OSError) as error:
        return _entry(mismatches, [f"dataset {spec.id}: {error}"], [])
    if not _same_data(recorded["revision"], where, location, revision):
        elsewhere = f"dataset {spec.id}: computed on revision {recorded['revision']}, the copy at hand is revision {revision}"
        return _entry(mismatches, [f"{elsewhere}; verify with --datasets giving that copy"], [])
    by_id = {row["id"]: row for row in all_rows}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        mismatches.append(f"sample ids not in {spec.id}/{eval_task.config}: {', '.join(map(_show, unknown[:SHOWN]))}" + _more(unknown))
        return _entry(mismatches, [], [])
    if task.get("rows_in_dataset") is not None and task["rows_in_dataset"] != len(all_rows):
        mismatches.append(f"rows_in_dataset is {task['rows_in_dataset']}, {spec.id}/{eval_task.config} has {len(all_rows)} rows")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        return _entry(mismatches + [f"settings.limit {limit!r:.40} is not a row count"], [], [])
    taken = [row["id"] for row in limited(eval_task, all_rows, limit)]
    if ids != taken and not repeated and len(ids) == len(taken):
        # The run scores the rows --limit takes, in the dataset's order: not a chosen subset.
        first = next(i for i, (a, b) in enumerate(zip(ids, taken)) if a != b)
        mismatches.append(f"the samples are not the rows the run takes (--limit {limit}): sample {first + 1} is {ids[first]}, the run's is {taken[first]}")
    rows = [by_id[i] for i in ids]

    # 3. The prompts: each sample's request rebuilt from its row and rendered again as the run rendered
    # it, compared whole (a prompt with anything added is not the task's), and bound to the sample's
    # prompt by the cache key. Prompts that cannot be rendered again make the task not verifiable.
    requests = [eval_task.request(row) for row in rows]
    keys = [request_key(request, s["prompt"]) if isinstance(s["prompt"], str) else "" for s, request in zip(samples, requests)]
    prompt_lines, cannot = [], []
    for s, row, request, key in zip(samples, rows, requests, keys):
        # Once one prompt cannot be rendered, the others are not tried (a template stopped for its time would be, each).
        lines, reason = _prompt_problems(s, row, request, key, spec.group_by, rendering if not cannot else {**rendering, "skip": True})
        prompt_lines += lines
        if reason and reason not in cannot:
            cannot.append(reason)
    mismatches += _capped(prompt_lines)
    if hashlib.sha256("".join(keys).encode()).hexdigest() != task["prompts_sha256"]:
        mismatches.append("prompts_sha256 is not the hash of the samples' prompts")
    unverifiable = [f"prompts: {reason}; they cannot be compared with the task's" for reason in cannot]

    # 4. The answers and what the metric was given for each row.
    responses = [sample["response"] for sample in samples]
    unfit = [f"sample {s['id']}: its response does not fit its request ({misfit(r, q) if isinstance(r, dict) else 'not an object'})"
             for s, r, q in zip(samples, responses, requests) if not isinstance(r, dict) or misfit(r, q)]  # fmt: skip
    if unfit:
        return _entry(mismatches + _capped(unfit), unverifiable, [])
    inputs = eval_task.metric_inputs(rows, responses)
    source = task.get("label_source", "rules")
    judge_labels = None
    if "judge" in task or source != "rules":
        judge_labels, problems = _judge_labels(source, samples, requests, inputs)
        if judge_labels is None:
            return _entry(mismatches + problems, unverifiable, [])
        mismatches += problems
        if source == "judge":
            inputs = {**inputs, "labels": judging.given_labels([{"label": label} for label in judge_labels])}
    input_problems, start = [], 0
    for sample, row in zip(samples, rows):
        count = eval_task.entries(row)
        given = {key: values[start] if count == 1 else values[start : start + count] for key, values in inputs.items()}
        start += count
        input_problems += [f"sample {sample['id']}: {line}" for line in _differences("metric_input", sample["metric_input"], _plain(given))]
    mismatches += _capped(input_problems)

    # 5. The metric, recomputed from the rebuilt inputs with the recorded options.
    metric_record = task["metric"]
    if metric_record["name"] != eval_task.metric:
        return _entry(mismatches, unverifiable + [f"metric {metric_record['name']!r:.40} recorded, this equita scores {name} with {eval_task.metric}"], [])
    options = metric_record["options"]
    # Options beyond the task's own name a model of the run's machine (a path, a Hub id): a
    # results file never decides what is loaded here. Different fixed ones are another equita's scoring.
    extra = sorted(options.keys() - eval_task.metric_options.keys())
    if extra:
        return _entry(mismatches, unverifiable + [f"metric options {', '.join(extra)} chose the metric's model for the run; it is not loaded from a results file"], [])
    changed = [f"{key} {_show(options.get(key))} recorded, {_show(value)} here" for key, value in eval_task.metric_options.items() if options.get(key) != value]
    if changed:
        return _entry(mismatches, unverifiable + [f"metric options differ from this equita's {name}: {'; '.join(changed)}"], [])
    metric, code_sha = load_metric(eval_task.metric)
    if code_sha != metric_record["module_sha256"]:
        notes.append(f"metric {eval_task.metric}: its code differs from the run's (module_sha256 {metric_record['module_sha256'][:12]} recorded, "
                     f"{code_sha[:12]} here); a difference may come from that change")  # fmt: skip
    try:
        scored = metric.compute(**inputs, **options)
    except OSError as error:
        # As in the run: the metric's own model (BERTScore encoder, neutrality classifier) is not at hand.
        return _entry(mismatches, unverifiable + [f"{eval_task.metric}'s model could not be loaded: {error}"], notes)
    except (ValueError, TypeError, KeyError) as error:
        return _entry(mismatches + [f"{eval_task.metric} refused the samples' inputs: {error}"], unverifiable, notes)
    recomputed = _plain({key: value for key, value in scored.items() if key not in eval_task.per_row_keys})
    mismatches += _capped(_differences("results", task["results"], recomputed))
    per_row = _plain(eval_task.per_row(scored, rows, responses))
    row_problems = []
    for sample, fields in zip(samples, per_row):
        row_problems += [f"sample {sample['id']}: {line}" for line in _differences("", {k: sample.get(k, ABSENT) for k in fields}, fields)]
    mismatches += _capped(row_problems)
    if judge_labels is not None:
        mismatches += _judge_problems(task, source, judge_labels, scored, inputs, options, metric, eval_task, samples)
    return _entry(mismatches, unverifiable, notes)


def _judge_labels(source: str, samples: list[dict], requests, inputs: dict) -> tuple[list[str] | None, list[str]]:
    """Each sample's judge label, read again from the judge's recorded reply (the judge is not
    asked: its replies are taken as given, as the model's answers are); the problems found."""
    if source not in ("rules", "judge"):
        return None, [f"label_source {_show(source)} recorded: 'rules' or 'judge'"]
    labels, problems = [], []
    for sample, request, stereotype, anti in zip(samples, requests, inputs["stereotypes"], inputs["anti_stereotypes"]):
        reply, recorded = sample.get("judge_reply"), sample.get("judge_label")
        if not isinstance(reply, str):
            return None, [f"sample {_show(sample['id'])}: the task was judged but the sample has no judge_reply"]
        _, order = judging.judge_request(request.user, "", stereotype, anti)
        label = judging.read_verdict(reply, order, stereotype)
        if recorded != label:
            problems.append(f"sample {_show(sample['id'])}: judge_label {_show(recorded)} recorded, its judge_reply reads {_show(label)}")
        labels.append(label)
    return labels, _capped(problems)


def _judge_problems(task, source, judge_labels, scored, inputs, options, metric, eval_task, samples) -> list[str]:
    """The judge's record recomputed: the scores under the other label source, and the agreement."""
    judged = task.get("judge")
    if not isinstance(judged, dict):
        return ["label_source is 'judge' but the task has no judge record"]
    plain_inputs = {key: value for key, value in inputs.items() if key != "labels"}
    given = judging.given_labels([{"label": label} for label in judge_labels])
    try:
        rules = scored if source == "rules" else metric.compute(**plain_inputs, **options)
        by_judge = scored if source == "judge" else (metric.compute(**inputs, labels=given, **options) if any(given) else None)
    except (ValueError, TypeError, KeyError) as error:
        return [f"{eval_task.metric} refused the judge's labels: {error}"]
    summary = lambda results: None if results is None else {key: results[key] for key in judging.SUMMARY}  # noqa: E731
    recomputed = {"results": summary(by_judge), "rules_results": summary(rules), "agreement": judging.agreement(rules["labels"], judge_labels)}
    problems = _differences("judge", {key: judged.get(key, ABSENT) for key in recomputed}, _plain(recomputed))
    if source == "judge":
        fields = [{"rules_label": label, "rules_reason": reason} for label, reason in zip(rules["labels"], rules["reasons"])]
        for sample, expected in zip(samples, fields):
            problems += [f"sample {sample['id']}: {line}" for line in _differences("", {k: sample.get(k, ABSENT) for k in expected}, expected)]
    return _capped(problems)


def _prompt_problems(sample: dict, row: dict, request, key: str, group_by: str, rendering: dict) -> tuple[list[str], str | None]:
    """(what is wrong with one sample's prompt, continuations and group given its dataset row;
    why its prompt cannot be rendered again, or None)."""
    prompt, where = sample["prompt"], f"sample {sample['id']}"
    if not isinstance(prompt, str):
        return [f"{where}: prompt is not text"], None
    problems, cannot = [], None
    if key != sample["prompt_sha256"]:
        problems.append(f"{where}: prompt_sha256 is not the key of its request and prompt (the prompt or a setting was changed)")
    sent = _sent_messages(prompt) if request.chat and rendering["server"] else None
    if sent is not None:
        # A server run without --tokenizer records the messages it sent, as JSON (which escapes the
        # row's newlines): they must be the request's messages, nothing added or changed.
        if sent != messages(request):
            problems.append(f"{where}: its prompt's messages are not the ones its task makes of the dataset row ({_messages_difference(sent, messages(request))})")
    elif not rendering.get("skip"):
        try:
            expected = render_recorded(request, rendering["chat_format"])
        except CannotRender as error:
            expected, cannot = None, str(error)
        if expected is not None and prompt != expected and rendering["dated"]:
            # Such a template (Llama 3's) writes today's date into the prompt: rendered on another day, it differs.
            cannot = "the chat template writes the date it is rendered on (strftime_now), and rendered today it differs"
        elif expected is not None and prompt != expected:
            problems.append(f"{where}: its prompt is not the one its task renders from the dataset row ({_first_difference(prompt, expected)})")
    if isinstance(request, Loglikelihood) and sample.get("continuations") != list(request.continuations):
        problems.append(f"{where}: continuations {_show(sample.get('continuations', ABSENT))} recorded, {_show(list(request.continuations))} from the row")
    if sample.get("group") != row[group_by]:
        problems.append(f"{where}: group {_show(sample.get('group', ABSENT))} recorded, {_show(row[group_by])} from the row")
    return problems, cannot


def _sent_messages(prompt: str):
    """The messages of a prompt that is the JSON `{"messages": [...]}` a server run records, else None."""
    if not prompt.startswith('{"messages"'):
        return None
    try:
        value = json.loads(prompt)
    except (ValueError, RecursionError):
        return None
    return value["messages"] if isinstance(value, dict) and value.keys() == {"messages"} else None


def _messages_difference(recorded, expected: list[dict]) -> str:
    """Which message differs, and where in its text."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in recorded] if isinstance(recorded, list) else None
    if roles != [m["role"] for m in expected]:
        return f"recorded roles {_show(roles)}, the task's {_show([m['role'] for m in expected])}"
    for sent, made in zip(recorded, expected):
        if sent != made:
            content = sent.get("content")
            if sent.keys() != made.keys() or not isinstance(content, str):
                return f"the {made['role']} message: recorded {_show(sent)}, the task's {_show(made)}"
            where = _first_difference(content, made["content"], other="the task's")
            return f"the {made['role']} message, {where}"
    return "they differ"


def _first_difference(recorded: str, expected: str, other: str = "rendered") -> str:
    """Where two prompts part, shown as a few characters of each from there."""
    at = next((i for i, (a, b) in enumerate(zip(recorded, expected)) if a != b), min(len(recorded), len(expected)))
    return f"from character {at}: recorded {_show(recorded[at : at + 40])}, {other} {_show(expected[at : at + 40])}"


def _entry(mismatches: list[str], unverifiable: list[str], notes: list[str]) -> dict:
    status = MISMATCH if mismatches else NOT_VERIFIABLE if unverifiable else VERIFIED
    return {"status": status, "problems": mismatches + unverifiable + notes}


def _same_data(recorded: str, where: str, location: str, revision: str) -> bool:
    """Whether the copy at hand is the data the results were computed on. A local build records
    its manifest's sha256; its published copy (a Hub commit) is the same data when it holds that manifest."""
    if revision == recorded:
        return True
    if location != "hub" or not recorded.startswith("manifest-sha256:"):
        return False
    from huggingface_hub import hf_hub_download

    try:
        manifest = Path(hf_hub_download(where, "manifest.json", repo_type="dataset", revision=revision))
    except Exception:  # noqa: BLE001 - unreachable or absent: the data cannot be shown to be the same
        return False
    return "manifest-sha256:" + hashlib.sha256(manifest.read_bytes()).hexdigest() == recorded


def _is_id(value) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _plain(value):
    """`value` as results.json and samples.jsonl hold it: strict JSON (non-finite floats null, lists not tuples)."""
    return json.loads(json.dumps(strict(value), ensure_ascii=False))


def _same(recorded, recomputed) -> bool:
    if isinstance(recorded, bool) or isinstance(recomputed, bool):
        return recorded is recomputed
    if isinstance(recorded, (int, float)) and isinstance(recomputed, (int, float)):
        return math.isclose(recorded, recomputed, rel_tol=1e-9, abs_tol=1e-12)
    return type(recorded) is type(recomputed) and recorded == recomputed


def _differences(path: str, recorded, recomputed) -> list[str]:
    """Every leaf where `recorded` and `recomputed` differ, as `path: X recorded, Y recomputed`."""
    if isinstance(recorded, dict) and isinstance(recomputed, dict):
        keys = list(recorded) + [key for key in recomputed if key not in recorded]
        return [line for key in keys for line in _differences(f"{path}.{key}" if path else str(key), recorded.get(key, ABSENT), recomputed.get(key, ABSENT))]
    if isinstance(recorded, list) and isinstance(recomputed, list) and len(recorded) == len(recomputed):
        return [line for i, (a, b) in enumerate(zip(recorded, recomputed)) for line in _differences(f"{path}[{i}]", a, b)]
    return [] if _same(recorded, recomputed) else [f"{path}: {_show(recorded)} recorded, {_show(recomputed)} recomputed"]


def _show(value) -> str:
    if value is ABSENT:
        return "absent"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _more(items: list) -> str:
    return f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""


def _capped(lines: list[str]) -> list[str]:
    """The first few problems of one check, and how many more there are."""
    return lines[:SHOWN] + ([f"... and {len(lines) - SHOWN} more like these"] if len(lines) > SHOWN else [])
