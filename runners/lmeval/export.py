"""`equita export lm-eval`: equita's runner tasks as an lm-evaluation-harness 0.4 task folder.

A lab that already runs lm-eval on its cluster (vLLM, data parallel, SLURM) runs equita's
benchmarks with it: `lm_eval --include_path DIR --tasks equita_bias --apply_chat_template`.
The folder holds one YAML per runner task (`equita_itap_at`, ..., `equita_jobs`, the gfg tasks),
a group per benchmark (`equita_bias`, `equita_gfg`), and a `utils.py` that hands each task to
`runners/lmeval/harness.py`: the prompts, requests and scores are equita's own, so an lm-eval run
and `equita run` give the same prompts, answers and numbers.

The YAMLs name the data the export found (a local build folder, the cache, or a Hub repository
at the commit of its version tag) and record the dataset's version and revision, which
`equita import lm-eval` checks. With `--limit N`, `samples-limit-N.json` lists the rows
`equita run --limit N` takes, for lm-eval's `--samples` (its own `--limit` takes the first rows).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .. import data
from ..requests import Generate
from ..run import equita_provenance, limited, write_atomic
from ..tasks import BENCHMARKS, EVAL_TASKS

UTILS = '''"""Written by `equita export lm-eval`: each task of this folder is equita's own (runners/lmeval/harness.py)."""

from equita.runners.lmeval.harness import EquitaTask  # noqa: F401
'''


class ExportError(ValueError):
    """An export that cannot be written; the message says why."""


def lm_eval_name(task: str) -> str:
    """The lm-eval name of an equita runner task: itap-at-oneshot -> equita_itap_at_oneshot."""
    return "equita_" + task.replace("-", "_")


def metric_names(task_name: str) -> list[str]:
    """What lm-eval reports for a task: its headline, the interval around it, the details a reader compares."""
    p = EVAL_TASKS[task_name].presentation
    names = [p.headline] + (["ci_low", "ci_high"] if p.interval else [])
    return names + [key for key, _ in p.details if key not in names]


def group_name(benchmark: str) -> str:
    return f"equita_{benchmark}"


def _task_yaml(name: str, rows: list[dict], where: str, location: str, revision: str, metric_options: dict) -> str:
    task = EVAL_TASKS[name]
    spec = task.dataset
    config = {
        "task": lm_eval_name(name),
        "dataset_path": str(Path(where).resolve()) if location != "hub" else where,
        "dataset_name": task.config,
        **({"dataset_kwargs": {"revision": revision}} if location == "hub" else {}),
        "test_split": task.split,
        "metadata": {
            "version": spec.version,  # lm-eval's task version: the dataset's, which fixes the prompts
            "equita": {
                "task": name,
                "request": type(task.request(rows[0])).__name__,
                "dataset": {"id": spec.id, "config": task.config, "split": task.split, "version": spec.version, "revision": revision,
                            "location": location},  # fmt: skip
                "rows": len(rows),
                "metric_options": metric_options.get(task.metric, {}),
                "equita": equita_provenance()["version"],
            },
        },
    }
    first = task.request(rows[0])
    if isinstance(first, Generate):
        # Each row is asked with its own budget and stop strings (EquitaTask.construct_requests);
        # these are the first row's, so that lm-eval shows them and does not fall back to its defaults.
        config["generation_kwargs"] = {"until": list(first.stop), "max_gen_toks": first.max_new_tokens, "do_sample": False}
    text = yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=1000)
    # lm-eval builds the task with the class this tag names; PyYAML cannot write the tag itself.
    head, rest = text.split("\n", 1)
    return f"{head}\nclass: !function utils.EquitaTask\n{rest}"


def export(out: Path, tasks: list[str], datasets: str | None = None, source_dir: Path | None = None, metric_options: dict | None = None,
           limit: int | None = None, log=print) -> list[Path]:  # fmt: skip
    """Write the task folder; return the files written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out}: is a file; give a folder for the lm-eval tasks")
    if limit is not None and limit < 1:
        raise ExportError(f"--limit {limit}: at least 1")
    written, located, samples = [], {}, {}
    out.mkdir(parents=True, exist_ok=True)
    for name in tasks:
        task = EVAL_TASKS[name]
        if task.dataset.id not in located:
            located[task.dataset.id] = data.locate(task.dataset, datasets, source_dir, log=log)
        where, location, revision = located[task.dataset.id]
        path = out / f"{lm_eval_name(name)}.yaml"
        rows = data.load_rows(task.config, task.split, where, location, revision)
        write_atomic(path, _task_yaml(name, rows, where, location, revision, metric_options or {}))
        written.append(path)
        if limit is not None:
            kept = {row["id"] for row in limited(task, rows, limit)}
            samples[lm_eval_name(name)] = [i for i, row in enumerate(rows) if row["id"] in kept]
    groups: dict[str, list[str]] = {}
    for tasks_of, benchmark in BENCHMARKS:  # the bias group gathers ItaP-AT and Jobs
        groups.setdefault(benchmark, []).extend(lm_eval_name(t.name) for t in tasks_of if t.name in tasks)
    for benchmark, members in groups.items():
        if members:
            path = out / f"{group_name(benchmark)}.yaml"
            write_atomic(path, yaml.safe_dump({"group": group_name(benchmark), "task": members, "metadata": {"version": 1}}, sort_keys=False))
            written.append(path)
    write_atomic(out / "utils.py", UTILS)
    written.append(out / "utils.py")
    if limit is not None:
        path = out / f"samples-limit-{limit}.json"
        write_atomic(path, json.dumps(samples, indent=1) + "\n")
        written.append(path)
    return written

