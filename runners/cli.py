"""`equita`: one command line for building, running and publishing the benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from equita.builders import TASKS, get_task
from equita.builders.common import SOURCE_DIR_ENV, BuildError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Social bias and gender fairness benchmarks for Italian language models.")
console = Console(stderr=True, soft_wrap=True)


@app.callback()
def _root() -> None:
    """Keeps `equita build` a subcommand even while it is the only one."""


@app.command()
def build(
    task: Annotated[str, typer.Argument(help=f"Dataset to build: {', '.join(s.cli_name for s in TASKS.values())}.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder, laid out like a Hub dataset repo.")],
    source_dir: Annotated[
        Optional[Path],
        typer.Option("--source-dir", envvar=SOURCE_DIR_ENV, help="Mirror of the upstream files, as <org>/<repo>/<path>; default: download pinned revisions."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty output folder.")] = False,
) -> None:
    """Build a dataset folder (parquet configs, card, manifest) from upstream sources and the project's tables."""
    try:
        spec = get_task(task)
    except KeyError as error:
        console.print(f"[red]error:[/red] {escape(error.args[0])}")
        raise typer.Exit(2) from None
    try:
        manifest = spec.build_to(out, source_dir=source_dir, force=force)
    except BuildError as error:
        console.print(f"[red]build failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    table = Table(title=f"{spec.title} v{spec.version} -> {out}")
    table.add_column("file")
    table.add_column("bytes", justify="right")
    table.add_column("sha256")
    for name, entry in manifest["files"].items():
        table.add_row(name, str(entry["bytes"]), entry["sha256"][:16])
    Console().print(table)


def main() -> None:
    app()
