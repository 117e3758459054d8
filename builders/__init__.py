"""Dataset builders: each task declares one TaskSpec; TASKS is the registry."""

from .gfg import SPEC as GFG
from .itap_at import SPEC as ITAP_AT
from .jobs import SPEC as JOBS

TASKS = {spec.id: spec for spec in (ITAP_AT, JOBS, GFG)}


def get_task(name: str):
    """A task by id (`itap_at`) or command-line name (`itap-at`)."""
    for spec in TASKS.values():
        if name in (spec.id, spec.cli_name):
            return spec
    valid = ", ".join(spec.cli_name for spec in TASKS.values())
    raise KeyError(f"unknown task {name!r}; valid tasks: {valid}")
