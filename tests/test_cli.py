"""The installed `equita` command, as a user runs it."""

from __future__ import annotations

import os
import subprocess

import pytest
from datasets import load_dataset

from conftest import EQUITA, PAT_MIRROR, UPSTREAM



def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "EQUITA_SOURCE_DIR"}
    environment.update(env or {})
    return subprocess.run([*EQUITA, *args], capture_output=True, text=True, env=environment, timeout=300)


@pytest.mark.skipif(not PAT_MIRROR.is_file(), reason="needs the P-AT mirror in ../shared/upstream (CI has it)")
def test_build_itap_at_end_to_end(tmp_path):
    out = tmp_path / "itap"
    result = run("build", "itap-at", "--out", str(out), "--source-dir", str(UPSTREAM))
    assert result.returncode == 0, result.stderr
    assert "manifest.json" not in result.stderr
    assert load_dataset(str(out), "race-4", split="test").num_rows == 160
    # The environment variable works as well as the flag; --force replaces the folder.
    again = run("build", "itap-at", "--out", str(out), "--force", env={"EQUITA_SOURCE_DIR": str(UPSTREAM)})
    assert again.returncode == 0, again.stderr


def test_unknown_task_lists_the_valid_ones(tmp_path):
    result = run("build", "itap_at_v2", "--out", str(tmp_path / "x"))
    assert result.returncode == 2
    assert "unknown task 'itap_at_v2'; valid tasks: itap-at" in result.stderr


def test_missing_mirror_fails_cleanly(tmp_path):
    result = run("build", "itap-at", "--out", str(tmp_path / "x"), "--source-dir", str(tmp_path))
    assert result.returncode == 1
    assert "build failed:" in result.stderr and "ART-Group-it/P-AT/Dataset/P-AT.json" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()


def test_build_jobs_needs_no_upstream(tmp_path):
    out = tmp_path / "jobs"
    result = run("build", "jobs", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert load_dataset(str(out), "sentences", split="test").num_rows == 1029  # 171 x 2 forms x 3 templates, and 3 neutral sentences


def test_gfl_it_option_is_for_gfg_only(tmp_path):
    result = run("build", "jobs", "--out", str(tmp_path / "x"), "--gfl-it", str(tmp_path / "g.json"))
    assert result.returncode == 2
    assert "--gfl-it applies to gfg only, not jobs" in result.stderr
