"""Where a build may write: --out is replaced only when it holds a build, atomically, and what an
interrupted build or conversion leaves behind is cleaned up (issue 15, data loss first)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from equita.builders import common, jobs
from equita.builders.common import BuildError, PREVIOUS, STAGING, is_build, sweep_staging


def _dead_pid() -> int:
    """The pid of a process that has already exited."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _hidden_siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def _notes(out: Path) -> None:
    out.mkdir()
    (out / "notes.txt").write_text("three months of notes")


def _build(out: Path) -> None:
    jobs.build(out)


def _file(out: Path) -> None:
    out.write_text("not a folder")


def _below_a_file(out: Path) -> None:
    out.parent.joinpath("blocker").write_text("a file")


# (setup of --out, force, the path built, expected message or None, what must survive)
CASES = [
    ("a folder of notes, --force", _notes, True, ".", "is not an equita build (no valid manifest.json); refusing to replace it, even with --force", "notes.txt"),
    ("a folder of notes", _notes, False, ".", "is not an equita build", "notes.txt"),
    ("a build, no --force", _build, False, ".", "exists and is not empty; pass --force to replace it", "manifest.json"),
    ("a file", _file, True, ".", "is a file, not a folder", None),
    ("below a file", _below_a_file, True, "../blocker/jobs", "is a file, so no folder can be made below it", None),
    ("a build, --force", _build, True, ".", None, "manifest.json"),
    ("an empty folder", lambda out: out.mkdir(), False, ".", None, "manifest.json"),
    ("nothing yet", lambda out: None, False, ".", None, "manifest.json"),
]  # fmt: skip


@pytest.mark.parametrize("case, setup, force, where, message, survivor", CASES, ids=[c[0] for c in CASES])
def test_build_replaces_only_builds(tmp_path, case, setup, force, where, message, survivor):
    out = tmp_path / "jobs"
    setup(out)
    target = (out / where).resolve() if where != "." else out
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    if message is None:
        jobs.build(target, force=force)
        assert is_build(target) and not common.verify_manifest(target)
    else:
        with pytest.raises(BuildError, match="^" + str(target).replace("\\", "\\\\") + ": ") as error:
            jobs.build(target, force=force)
        assert message in str(error.value)
        # Nothing lost: every file that was there is there, unchanged.
        assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    if survivor:
        assert (out / survivor).is_file()
    assert _hidden_siblings(out) == []  # no staging folder left behind


def test_the_current_folder_is_never_replaced(tmp_path, monkeypatch):
    jobs.build(tmp_path / "here")
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(BuildError, match="is the current folder or contains it"):
        jobs.build(Path("."), force=True)
    with pytest.raises(BuildError, match="is the current folder or contains it"):
        jobs.build(tmp_path, force=True)
    assert is_build(tmp_path / "here")


def test_the_command_line_refuses_with_exit_code_1_and_no_traceback(tmp_path):
    out = tmp_path / "mine"
    _notes(out)
    done = subprocess.run([sys.executable, "-m", "equita.runners.cli", "build", "jobs", "--out", str(out), "--force"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "is not an equita build" in done.stdout + done.stderr and "Traceback" not in done.stdout + done.stderr
    assert (out / "notes.txt").read_text() == "three months of notes"


def test_replacement_is_one_atomic_swap_where_the_system_has_it(tmp_path, monkeypatch):
    out = tmp_path / "jobs"
    jobs.build(out)
    (out / "stale.txt").write_text("from the old build")  # the new build must not keep it
    swaps = []
    real = common._exchange
    monkeypatch.setattr(common, "_exchange", lambda a, b: swaps.append((a, b)) or real(a, b))
    jobs.build(out, force=True)
    assert len(swaps) == 1 and not (out / "stale.txt").exists() and not common.verify_manifest(out)
    assert _hidden_siblings(out) == []


def test_without_the_swap_an_interruption_between_the_renames_is_repaired(tmp_path, monkeypatch):
    out = tmp_path / "jobs"
    jobs.build(out)
    old_manifest = (out / "manifest.json").read_bytes()
    # The state a kill between the two renames leaves: --out missing, the old build inside the
    # staging folder of a process that no longer runs.
    staging = tmp_path / f".jobs{STAGING}{_dead_pid()}-x1y2"
    staging.mkdir()
    out.replace(staging / PREVIOUS)
    assert not out.exists()
    assert sweep_staging(out) == [staging]
    assert (out / "manifest.json").read_bytes() == old_manifest and not staging.exists()
    # And the fallback path itself, when renameat2 is unavailable, leaves a complete build.
    monkeypatch.setattr(common, "_exchange", lambda a, b: False)
    jobs.build(out, force=True)
    assert not common.verify_manifest(out) and _hidden_siblings(out) == []


def test_abandoned_staging_is_swept_and_live_staging_is_kept(tmp_path):
    out = tmp_path / "model"
    abandoned = tmp_path / f".model{STAGING}{_dead_pid()}-abc"
    running = tmp_path / f".model{STAGING}{os.getpid()}-def"
    unrelated = tmp_path / ".model.notes"
    for folder in (abandoned, running, unrelated):
        folder.mkdir()
        (folder / "weights.bin").write_bytes(b"0" * 1024)
    assert sweep_staging(out) == [abandoned]
    assert not abandoned.exists() and running.exists() and unrelated.exists()


def test_builds_are_readable_by_everyone(tmp_path):
    out = tmp_path / "jobs"
    jobs.build(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert all(stat.S_IMODE(p.stat().st_mode) == (0o755 if p.is_dir() else 0o644) for p in out.rglob("*"))
