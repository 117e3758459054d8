"""The results contract: what a results.json holds, how it is checked, and how it is read.

`equita run` writes it; the report, the comparison, `equita verify`, `equita submit` and the
leaderboard read it, always through `load_results`, which refuses a file that does not follow
the schema with a one-line reason (results files come from other people: they are untrusted).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from urllib.parse import quote

from ...builders.common import path_part

# Version of results.json; bump on any change of its layout and say so in the README.
RESULTS_SCHEMA = "equita.results/1"


class ResultsError(Exception):
    """A results folder or file that cannot be read as equita results; the message says why."""


# A results.json is kilobytes (a few megabytes with every Jobs profession); a larger file is not one.
MAX_RESULTS_BYTES = 64 * 2**20
# A sample line holds one prompt and one answer: kilobytes. A longer line (a file without newlines)
# is refused before it is read whole into memory.
MAX_SAMPLE_LINE_BYTES = 8 * 2**20


def load_results(folder: Path) -> dict:
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise ResultsError(f"{folder}: no results.json (is it the --out folder of `equita run`?)")
    if path.stat().st_size > MAX_RESULTS_BYTES:
        raise ResultsError(f"{path}: {path.stat().st_size} bytes, larger than a results file can be ({MAX_RESULTS_BYTES})")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: not valid JSON ({error})") from None
    except UnicodeDecodeError as error:
        raise ResultsError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except RecursionError:
        raise ResultsError(f"{path}: nested too deeply to be a results file") from None
    except ValueError as error:  # json's limit on integer digits (4300): no result has such a number
        raise ResultsError(f"{path}: holds a number too long to be a result ({str(error).split(':')[0]})") from None
    if not isinstance(results, dict):
        raise ResultsError(f"{path}: not a JSON object (a results file is one object; this is a {type(results).__name__})")
    if results.get("schema") != RESULTS_SCHEMA:
        raise ResultsError(f"{path}: schema {results.get('schema')!r}, this equita reads {RESULTS_SCHEMA!r}")
    problems = validate_results(results)
    if problems:
        raise ResultsError(f"{path}: does not follow the results schema: {'; '.join(problems[:3])}")
    return results


# Keys of a metric's results that must be numbers (or null) wherever they occur, groups included.
NUMERIC = {"bias_score", "ci_low", "ci_high", "p_stereotype", "p_anti_stereotype", "p_neutral", "p_error", "n", "soft_bias_score",
           "mean_log_ratio", "log_ratio_ci_low", "log_ratio_ci_high", "n_sentences", "ties", "cwa", "misgeneration", "coverage",
           "accuracy", "f1", "entry_mean_cwa", "entry_mean_misgeneration", "n_annotations", "predicted_neutral", "n_clusters",
           "constant_instructions", "one_sided_instructions", "min", "max", "range", "sd", "p_value", "log_ratio", "log_p_m",
           "log_p_f", "n_ambiguous"}  # fmt: skip


# No metric writes a number this large (log-probabilities of a whole dataset are thousands); larger
# ones overflow the comparison's arithmetic, and a 400-digit integer is not even a float.
MAX_MAGNITUDE = 1e15


def shown(name) -> str:
    """A name from a results file inside a one-line message: control characters (a newline) as their escapes."""
    text = str(name)
    return text if text.isprintable() else ascii(text)[1:-1]


def _is_number(value) -> bool:
    """A finite number no metric could be too large for; a huge integer is compared, never turned into a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_MAGNITUDE
    return math.isfinite(value) and abs(value) <= MAX_MAGNITUDE


def _check_numbers(where: str, value, problems: list[str], depth: int = 0) -> None:
    if depth > 8:
        problems.append(f"{where}: nested too deeply")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in NUMERIC and item is not None and not _is_number(item):
                size = " (no result is that large)" if isinstance(item, (int, float)) and not isinstance(item, bool) else ""
                problems.append(f"{where}.{shown(key)}: expected a finite number or null, got {_cut(item)}{size}")
            elif isinstance(item, (dict, list)):
                _check_numbers(f"{where}.{shown(key)}", item, problems, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value[:5000]):
            if isinstance(item, (dict, list)):
                _check_numbers(f"{where}[{index}]", item, problems, depth + 1)


def _cut(value) -> str:
    """A value inside a message: its repr, cut to 40 characters (a 400-digit integer included)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else f"an integer of {len(str(abs(value)))} digits"
    return text[:40]


# The request types `equita run` records (runners/requests.py).
REQUEST_TYPES = ("Generate", "Loglikelihood")
# A dataset version as the builds write it, X.Y.Z (a pre-release suffix allowed): it names pages.
VERSION = re.compile(r"\d{1,6}\.\d{1,6}\.\d{1,6}(-[0-9A-Za-z.]{1,20})?")
# Model ids and task names become page and file names once %XX-quoted (the leaderboard's `slug`):
# with the other parts of a name (prefix, version, suffix) they stay under the file systems' 255 bytes.
MAX_QUOTED_NAME = 180
# Parts of a metric's results that hold one scored part per name (a group, an instruction, a template).
PARTS_BY_NAME = ("groups", "instructions", "by_template", "without_ambiguous_by_template")
# Parts that are one object (or null) when present.
OBJECTS = ("instruction_spread", "template_spread", "without_ambiguous", "prior_corrected")
# What the report reads from the result and from each of its groups (and instructions), per metric.
PART_KEYS = {
    "itap_at_bias": ("bias_score", "ci_low", "ci_high", "p_stereotype", "p_anti_stereotype", "p_neutral", "p_error", "n", "warnings"),
    "jobs_bias": ("bias_score", "ci_low", "ci_high", "mean_log_ratio", "log_ratio_ci_low", "log_ratio_ci_high", "n", "ties"),
}


def quoted_length(name: str) -> int:
    """The length of a name as a page or file name (%XX-quoted, as the leaderboard's `slug` writes it)."""
    return len(quote(name, safe="-."))


def _check_part(where: str, part, required: tuple[str, ...], problems: list[str], depth: int = 0) -> None:
    """One scored part of a metric's results (the result, a group, an instruction): its shape as the metric writes it.
    Numbers are checked by _check_numbers; here the objects, the names and the text."""
    if not isinstance(part, dict):
        problems.append(f"{where}: expected an object, got {_cut(part)}")
        return
    if depth > 4:
        problems.append(f"{where}: nested too deeply")
        return
    missing = [key for key in required if key not in part]
    if missing:
        problems.append(f"{where}: missing {', '.join(map(repr, missing))}")
    if "warnings" in part and not (isinstance(part["warnings"], list) and all(isinstance(w, str) for w in part["warnings"])):
        problems.append(f"{where}.warnings: expected a list of strings")
    if "interpretable" in part and not isinstance(part["interpretable"], (bool, type(None))):
        problems.append(f"{where}.interpretable: expected true, false or null")
    for key in OBJECTS:
        if part.get(key) is not None and not isinstance(part[key], dict):
            problems.append(f"{where}.{key}: expected an object or null, got {_cut(part[key])}")
    if isinstance(part.get("prior_corrected"), dict):
        _check_part(f"{where}.prior_corrected", part["prior_corrected"], (), problems, depth + 1)
    for key in PARTS_BY_NAME:
        if key not in part:
            continue
        if not isinstance(part[key], dict):
            problems.append(f"{where}.{key}: expected an object")
            continue
        # Groups and instructions are read as the result is; templates carry other keys.
        inner = required if key in ("groups", "instructions") else ()
        for name, member in part[key].items():
            if not name.isprintable() or not name or len(name) > 200:
                problems.append(f"{where}.{key}: the name '{shown(name)[:60]}' is empty, too long or holds control characters")
                continue
            _check_part(f"{where}.{key}.{name}", member, inner, problems, depth + 1)


def _check_scale(where: str, task: dict, problems: list[str]) -> None:
    """A bias score and its interval, in the result and each group, lie on the metric's scale ([-1, 1] for ItaP-AT):
    the ranking, the bars and the comparison's plot are drawn on it."""
    from ..tasks import presentation  # the declarations; most readers of results need them anyway

    declared = presentation("", task["metric"]["name"])
    if declared is None or declared.unbiased is None:
        return  # only a bias score is bounded by its definition (a BERTScore F1 can leave [0, 1])
    low, high = declared.scale
    slack = (high - low) * 1e-6  # rounding
    result = task["results"]
    parts = [("", result)] + [(f".groups.{name}", group) for name, group in (result.get("groups") or {}).items() if isinstance(group, dict)]
    for name, part in parts:
        for key in (declared.headline, "ci_low", "ci_high"):
            value = part.get(key)
            if _is_number(value) and not low - slack <= value <= high + slack:
                problems.append(f"{where}.results{name}.{key}: {value!r:.40} is outside the metric's scale [{low:g}, {high:g}]")


def validate_results(results: dict) -> list[str]:
    """Problems of a results.json against schema equita.results/1 (empty when it follows it)."""
    problems = []

    def need(where: str, value, keys: dict):
        if not isinstance(value, dict):
            problems.append(f"{where}: not an object")
            return
        for key, kind in keys.items():
            if key not in value:
                problems.append(f"{where}: missing {key!r}")
            elif kind is not None and not isinstance(value[key], kind):
                problems.append(f"{where}.{key}: expected {kind.__name__ if isinstance(kind, type) else '/'.join(k.__name__ for k in kind)}")

    need("results", results, {"schema": str, "created": str, "equita": dict, "model": dict, "settings": dict, "tasks": dict, "timings": dict})
    if problems:
        return problems
    if results["schema"] != RESULTS_SCHEMA:
        problems.append(f"schema is {results['schema']!r}, not {RESULTS_SCHEMA!r}")
    need("model", results["model"], {"id": str, "source": str, "revision": str, "dtype": str, "device": str, "chat_template": bool})
    model = results["model"]
    parameters = model.get("parameters")
    if parameters is not None and (isinstance(parameters, bool) or not isinstance(parameters, int) or not 0 <= parameters <= MAX_MAGNITUDE):
        problems.append(f"model.parameters: expected a count of parameters (a non-negative integer) or null, got {_cut(parameters)}")
    if isinstance(model.get("id"), str) and isinstance(model.get("revision"), str):
        label = f"{model['id']}@{model['revision'][:8]}"  # the leaderboard names the model's page by it
        if quoted_length(label) > MAX_QUOTED_NAME:
            problems.append(f"model.id: too long to name a page ({quoted_length(label)} characters once %XX-quoted with its revision, at most {MAX_QUOTED_NAME})")
    if results["equita"].get("version") is not None and not isinstance(results["equita"]["version"], str):
        problems.append("equita.version: expected a string or null")
    limit = results["settings"].get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        problems.append(f"settings.limit: expected a row count or null, got {_cut(limit)}")
    if not results["tasks"]:
        problems.append("tasks: empty")
    for name, task in results["tasks"].items():
        where = f"tasks.{shown(name)}"
        try:
            path_part(name, "task name")
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if quoted_length(name) > MAX_QUOTED_NAME:
            problems.append(f"{where}: the task name is too long to name a page or file ({quoted_length(name)} characters once %XX-quoted, at most {MAX_QUOTED_NAME})")
            continue
        need(where, task, {"dataset": dict, "request": dict, "prompts_sha256": str, "n": int, "metric": dict, "results": (dict, type(None)), "timings": dict})
        if isinstance(task, dict) and "rows_in_dataset" in task:
            total, n = task["rows_in_dataset"], task.get("n")
            if isinstance(total, bool) or not isinstance(total, int) or (isinstance(n, int) and total < n):
                problems.append(f"{where}.rows_in_dataset: {total!r} is not a row count at least n")
        if not isinstance(task, dict):
            continue
        if isinstance(task.get("dataset"), dict):
            need(f"{where}.dataset", task["dataset"], {"id": str, "repo": str, "location": str, "config": str, "version": str, "revision": str})
            version = task["dataset"].get("version")
            if isinstance(version, str) and not VERSION.fullmatch(version):
                problems.append(f"{where}.dataset.version '{shown(version)[:40]}' is not a version X.Y.Z")
        if isinstance(task.get("request"), dict):
            request = task["request"]
            if request.get("type") not in REQUEST_TYPES:
                problems.append(f"{where}.request.type: {_cut(request.get('type'))} is not one of {', '.join(REQUEST_TYPES)}")
            if request.get("format") is not None and not isinstance(request["format"], str):
                problems.append(f"{where}.request.format: expected a string or null")
        if isinstance(task.get("timings"), dict):
            need(f"{where}.timings", task["timings"], {"computed": int, "cached": int})
        if isinstance(task.get("metric"), dict):
            need(f"{where}.metric", task["metric"], {"name": str, "module_sha256": str, "options": dict})
        if task.get("results") is None and not task.get("not_computed"):
            problems.append(f"{where}: results is null without a not_computed reason")
        if task.get("not_computed") is not None and not isinstance(task["not_computed"], str):
            problems.append(f"{where}.not_computed: expected a string")
        if "label_source" in task:
            # Whose labels the scores use ranks them apart: a judge's source must name its judge.
            judged = task.get("judge")
            if task["label_source"] not in ("rules", "judge"):
                problems.append(f"{where}.label_source: {_cut(task['label_source'])} is not 'rules' or 'judge'")
            elif task["label_source"] == "judge" and not (isinstance(judged, dict) and isinstance(judged.get("model"), str) and isinstance(judged.get("prompt_version"), str)):
                problems.append(f"{where}.label_source is 'judge' without a judge record naming its model and prompt_version")
            elif task["label_source"] == "judge" and quoted_length(f"judge {judged['model']}, prompt v{judged['prompt_version']}") > MAX_QUOTED_NAME:
                problems.append(f"{where}.judge.model: too long to name a page (at most {MAX_QUOTED_NAME} characters once %XX-quoted)")
        if isinstance(task.get("results"), dict):
            before = len(problems)
            _check_numbers(f"{where}.results", task["results"], problems)
            metric = task["metric"].get("name") if isinstance(task.get("metric"), dict) else None
            _check_part(f"{where}.results", task["results"], PART_KEYS.get(metric, ()), problems)
            if len(problems) == before and isinstance(metric, str):
                _check_scale(where, task, problems)
    return problems


def limited_tasks(results: dict) -> list[str]:
    """The tasks that --limit cut short (a limit at or above a task's size cuts nothing).
    Results written before `rows_in_dataset` was recorded count as cut whenever a limit was set."""
    if results["settings"].get("limit") is None:
        return []
    return [name for name, task in results["tasks"].items() if not isinstance(task.get("rows_in_dataset"), int) or task["n"] < task["rows_in_dataset"]]


def headline(task: dict) -> tuple[str, float]:
    """(key, value) of a task's main number, as its benchmark's presentation declares it."""
    from ..tasks import presentation  # the declarations import matplotlib; most readers of results need neither

    declared = presentation("", task["metric"]["name"])
    key = declared.headline if declared else "bias_score"
    return key, task["results"][key]


def load_samples(folder: Path) -> list[dict] | None:
    """A results folder's samples.jsonl; None when the folder has none."""
    path = Path(folder) / "samples.jsonl"
    return read_samples(path) if path.is_file() else None


def read_samples(path: Path) -> list[dict]:
    """A samples file, one JSON object a line (blank lines skipped); anything else is refused with its line number."""
    samples = []
    with Path(path).open("rb") as handle:
        number = 0
        while True:
            # A bounded read: a file without newlines is never one line in memory.
            raw = handle.readline(MAX_SAMPLE_LINE_BYTES + 1)
            if not raw:
                break
            number += 1
            if len(raw) > MAX_SAMPLE_LINE_BYTES:
                raise ResultsError(f"{path} line {number}: longer than a sample can be (over {MAX_SAMPLE_LINE_BYTES} bytes; is it a samples file?)")
            if not raw.strip():
                continue
            try:
                sample = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                raise ResultsError(f"{path} line {number}: not UTF-8 ({error.reason} at byte {error.start})") from None
            except json.JSONDecodeError as error:
                raise ResultsError(f"{path} line {number}: not valid JSON ({error.msg} at column {error.colno})") from None
            except ValueError as error:  # json's limit on integer digits
                raise ResultsError(f"{path} line {number}: holds a number too long to be a sample's ({str(error).split(':')[0]})") from None
            except RecursionError:
                raise ResultsError(f"{path} line {number}: nested too deeply to be a sample") from None
            if not isinstance(sample, dict):
                raise ResultsError(f"{path} line {number}: not a JSON object (a sample is one object; this is a {type(sample).__name__})")
            samples.append(sample)
    return samples
