"""Every metric folder is an `evaluate` module: its layout, its card, and the copy the wheel installs."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from conftest import REPO

METRICS = sorted(p.name for p in (REPO / "metrics").iterdir() if p.is_dir() and (p / f"{p.name}.py").is_file())


def test_every_metric_is_found():
    assert METRICS == ["gente_neutrality", "gfg_detection", "itap_at_bias", "jobs_bias", "neogate"]


@pytest.mark.parametrize("name", METRICS)
def test_module_folder_follows_evaluate_layout_and_ships_installed(name):
    folder = REPO / "metrics" / name
    for file in [f"{name}.py", "README.md", "requirements.txt", "app.py"]:
        assert (folder / file).is_file(), file
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "app_file: app.py" in card
    assert "@inproceedings" in card or "@misc" in card  # every card cites its paper
    assert f'evaluate.load("{name}")' in (folder / "app.py").read_text(encoding="utf-8")
    assert "evaluate==" in (folder / "requirements.txt").read_text(encoding="utf-8")
    # evaluate's requirement scanner reads one import per line.
    source = (folder / f"{name}.py").read_text(encoding="utf-8")
    assert not any(line.startswith("import ") and "," in line for line in source.splitlines())
    # The installed package ships the same code (pyproject lists the folder as package data).
    installed = Path(str(resources.files("equita.metrics") / name))
    assert (installed / f"{name}.py").read_bytes() == source.encode("utf-8")
    assert (installed / "README.md").is_file() and (installed / "requirements.txt").is_file()
