"""The command line as a person reads it in an 80-column terminal: task names whole, `run --help`
in panels, every option's default said, nothing cut short with an ellipsis."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from equita.runners.cli import app
from equita.runners.tasks import EVAL_TASKS, TASK_GROUPS

COMMANDS = typer.main.get_command(app).commands
NARROW = {"COLUMNS": "80", "TERMINAL_WIDTH": "80"}


def invoke(*args: str) -> str:
    done = CliRunner().invoke(app, list(args), env=NARROW)
    assert done.exit_code == 0, done.output
    return done.output


def test_tasks_shows_every_task_name_whole_at_80_columns():
    output = invoke("tasks")
    assert max(len(line) for line in output.splitlines()) <= 80
    cells = [line.split("│")[1].strip() for line in output.splitlines() if line.startswith("│")]
    assert set(EVAL_TASKS) <= set(cells), "a task name is cut or wrapped"
    assert "…" not in output
    for group, members in TASK_GROUPS.items():
        assert f"{group}: {', '.join(members)}" in " ".join(output.split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_fits_80_columns_without_cutting_words(command):
    output = invoke(command, "--help")
    assert max(len(line) for line in output.splitlines()) <= 80, command
    assert "…" not in output, command


def test_run_help_is_grouped_into_panels_in_order():
    output = invoke("run", "--help")
    panels = ["What to run", "Model in this process", "Model on a server", "GFG metrics' models", "Submit to the Hub"]
    positions = [output.index(f"─ {panel} ") for panel in panels]
    assert positions == sorted(positions)
    # Each option sits in its panel: after the panel's title, before the next one's.
    expected = {"--model": 0, "--batch-size": 0, "--datasets": 0, "--device": 1, "--trust-remote-code": 1, "--server": 2, "--max-retries": 2,
                "--bertscore-model": 3, "--neutrality-tokenizer": 3, "--push": 4, "--datasets-org": 4}  # fmt: skip
    for option, panel in expected.items():
        at = output.index(f" {option} ")
        assert positions[panel] < at < (positions[panel + 1] if panel + 1 < len(positions) else len(output)), option


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_says_its_default(command):
    for param in COMMANDS[command].params:
        if param.param_type_name != "option" or param.required or param.name == "help":
            continue
        shown = param.show_default is not False and param.default not in (None, False, ())
        assert shown or "default" in (param.help or "").lower(), f"{command} {param.opts[0]}: its help does not say the default"
