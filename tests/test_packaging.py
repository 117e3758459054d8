"""`pip install .` gives one `equita` namespace with its tables and card templates, nothing generic."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from conftest import REPO


def test_wheel_holds_only_the_equita_namespace_with_data(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ["pyproject.toml", "README.md", "builders", "runners", "dataset_cards", "metrics"]:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, source / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("equita-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"equita"}
    for required in [
        "equita/builders/itap_at.py",
        "equita/builders/tables/itap_at/inputs.tsv",
        "equita/builders/tables/itap_at/instructions.tsv",
        "equita/builders/tables/itap_at/subdatasets.yaml",
        "equita/builders/tables/itap_at/istat_names_2022.tsv",
        "equita/dataset_cards/itap_at.md.j2",
        "equita/runners/cli.py",
        "equita/runners/hub/site/index.html.j2",
    ]:
        assert required in names, required
    # Every module of the source tree ships: a subpackage missing from pyproject's list would not.
    for folder in ["builders", "runners", "metrics"]:
        for module in (REPO / folder).rglob("*.py"):
            assert f"equita/{module.relative_to(REPO).as_posix()}" in names, module
    assert not any("__pycache__" in name for name in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "equita = equita.runners:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
