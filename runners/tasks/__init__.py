"""The evaluation tasks `equita run` knows, each declared once in its benchmark's file here.

A benchmark's file (itap_at.py, jobs.py, gfg.py) declares its `EvalTask`s: which built dataset
(and config) each reads, how a row becomes a request, which metric module scores the answers and
with which inputs, how the metric's per-row output reads in samples.jsonl, and how the results
read (`Presentation`). Adding a benchmark is a builder, a metric and one more file here, listed in
BENCHMARKS.
"""

from __future__ import annotations

from . import gfg, itap_at, jobs
from .base import EvalTask, Presentation

__all__ = ["EVAL_TASKS", "TASK_GROUPS", "EvalTask", "Presentation", "presentation", "select_tasks"]

# Each benchmark's tasks, and the group name they are run under: the social-bias benchmarks
# (minutes on a CPU) and the Gender-Fair Generation ones (long generations, metrics with models).
BENCHMARKS = ((itap_at.TASKS, "bias"), (jobs.TASKS, "bias"), (gfg.TASKS, "gfg"))

EVAL_TASKS = {task.name: task for tasks, _ in BENCHMARKS for task in tasks}
TASK_GROUPS = {"all": tuple(EVAL_TASKS)}
for tasks, group in BENCHMARKS:
    TASK_GROUPS[group] = TASK_GROUPS.get(group, ()) + tuple(task.name for task in tasks)


def presentation(task_name: str, metric: str | None = None) -> Presentation | None:
    """How a results file's task reads: its declaration, found by task name or, for a task this
    equita does not run (renamed, from another version), by the metric that scored it."""
    if task_name in EVAL_TASKS:
        return EVAL_TASKS[task_name].presentation
    return next((task.presentation for task in EVAL_TASKS.values() if task.metric == metric), None)


def select_tasks(names: str) -> list[EvalTask]:
    """Tasks from a comma-separated list of task and group names, each task once, in the order given."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    valid = f"valid tasks: {', '.join(TASK_GROUPS)}, {', '.join(EVAL_TASKS)}"
    if not wanted:
        raise KeyError(f"no task given; {valid}")
    unknown = [name for name in wanted if name not in EVAL_TASKS and name not in TASK_GROUPS]
    if unknown:
        raise KeyError(f"unknown task {', '.join(map(repr, unknown))}; {valid}")
    expanded = [task for name in wanted for task in TASK_GROUPS.get(name, (name,))]
    return [EVAL_TASKS[name] for name in dict.fromkeys(expanded)]
