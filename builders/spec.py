"""The one declaration of a benchmark task; builders, runner and results all read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class TaskSpec:
    id: str  # snake_case, used for builders/<id>.py, metrics/<id>/ and the Hub repo name
    cli_name: str  # what users type: `equita build <cli_name>`
    version: str  # dataset version; bump with a changelog line in the card on any change
    hub_repo: str  # where the published dataset lives
    title: str
    configs: tuple[str, ...]  # every config the built dataset declares, default first
    group_by: str  # column that splits results into groups
    build: Callable[..., dict] = field(repr=False)  # build(out: Path, source_dir: Path | None, force: bool)
    metric: str | None = None  # metrics/<metric>/, once it exists

    def build_to(self, out: Path, source_dir: Path | None = None, force: bool = False, **options) -> dict:
        """Build into `out`; `options` are the builder's own (gfg: gfl_it=FILE)."""
        return self.build(out=Path(out), source_dir=source_dir, force=force, **options)
