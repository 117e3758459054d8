"""The results contract: what a results.json holds, how it is checked, and how it is read.

`equita run` writes it; the report, the comparison, `equita verify`, `equita submit` and the
leaderboard read it, always through `load_results`, which refuses a file that does not follow
the schema with a one-line reason (results files come from other people: they are untrusted).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ...builders.common import path_part

# Version of results.json; bump on any change of its layout and say so in the README.
RESULTS_SCHEMA = "equita.results/1"


class ResultsError(Exception):
    """A results folder or file that cannot be read as equita results; the message says why."""


def load_results(folder: Path) -> dict:
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise ResultsError(f"{folder}: no results.json (is it the --out folder of `equita run`?)")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: not valid JSON ({error})") from None
    except UnicodeDecodeError as error:
        raise ResultsError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except RecursionError:
        raise ResultsError(f"{path}: nested too deeply to be a results file") from None
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


def _check_numbers(where: str, value, problems: list[str], depth: int = 0) -> None:
    if depth > 8:
        problems.append(f"{where}: nested too deeply")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in NUMERIC and item is not None and (isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item)):
                problems.append(f"{where}.{key}: expected a finite number or null, got {item!r:.40}")
            elif isinstance(item, (dict, list)):
                _check_numbers(f"{where}.{key}", item, problems, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value[:5000]):
            if isinstance(item, (dict, list)):
                _check_numbers(f"{where}[{index}]", item, problems, depth + 1)


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
    if not results["tasks"]:
        problems.append("tasks: empty")
    for name, task in results["tasks"].items():
        where = f"tasks.{name}"
        try:
            path_part(name, "task name")
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        need(where, task, {"dataset": dict, "request": dict, "prompts_sha256": str, "n": int, "metric": dict, "results": (dict, type(None)), "timings": dict})
        if isinstance(task, dict) and "rows_in_dataset" in task:
            total, n = task["rows_in_dataset"], task.get("n")
            if isinstance(total, bool) or not isinstance(total, int) or (isinstance(n, int) and total < n):
                problems.append(f"{where}.rows_in_dataset: {total!r} is not a row count at least n")
        if isinstance(task, dict) and isinstance(task.get("dataset"), dict):
            need(f"{where}.dataset", task["dataset"], {"id": str, "repo": str, "location": str, "config": str, "version": str, "revision": str})
        if isinstance(task, dict) and isinstance(task.get("metric"), dict):
            need(f"{where}.metric", task["metric"], {"name": str, "module_sha256": str, "options": dict})
        if isinstance(task, dict) and task.get("results") is None and not task.get("not_computed"):
            problems.append(f"{where}: results is null without a not_computed reason")
        if isinstance(task, dict) and isinstance(task.get("results"), dict):
            _check_numbers(f"{where}.results", task["results"], problems)
            result = task["results"]
            for key in ("groups", "instructions", "by_template"):
                if key in result and not isinstance(result[key], dict):
                    problems.append(f"{where}.results.{key}: expected an object")
            if "warnings" in result and not (isinstance(result["warnings"], list) and all(isinstance(w, str) for w in result["warnings"])):
                problems.append(f"{where}.results.warnings: expected a list of strings")
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
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                sample = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                raise ResultsError(f"{path} line {number}: not UTF-8 ({error.reason} at byte {error.start})") from None
            except json.JSONDecodeError as error:
                raise ResultsError(f"{path} line {number}: not valid JSON ({error.msg} at column {error.colno})") from None
            except RecursionError:
                raise ResultsError(f"{path} line {number}: nested too deeply to be a sample") from None
            if not isinstance(sample, dict):
                raise ResultsError(f"{path} line {number}: not a JSON object (a sample is one object; this is a {type(sample).__name__})")
            samples.append(sample)
    return samples
