"""The second red-team's probes of `equita run` itself (issue 27): the run lock under simultaneous
starts (D6), a finished result kept when a rerun cannot compute it (D8), a full disk (D16), and
bad arguments refused before the model loads (D19, D23, D25, D26, D29). Plumbing: the scripted
fake model, monkeypatched in; the server's own probes are in test_probes_server.py."""

from __future__ import annotations

import errno
import json
import multiprocessing
import time
from pathlib import Path

import pytest

from equita.builders import jobs
from equita.runners.run import LOCK_FILE, RunError, RunOptions, locked, run
from test_probes import invoke, tree


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("datasets")
    jobs.build(folder / "jobs")
    return folder


def _options(out: Path, datasets: Path, **changes) -> RunOptions:
    return RunOptions(**{"model": "scripted", "out": out, "tasks": "jobs", "datasets": str(datasets), "limit": 2, "batch_size": 4, **changes})


@pytest.fixture()
def scripted(monkeypatch):
    from fake_model import ScriptedModel

    model = ScriptedModel()
    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: model)
    return model


def _hold_the_lock(out: str, ready, release) -> None:
    with locked(Path(out)):
        ready.set()
        release.wait(20)


def test_a_run_refused_by_the_lock_leaves_the_holders_lock_in_place(tmp_path, datasets, scripted):
    # D6: two runs start together on a new --out; the one refused must not clean up the winner's folder.
    out = tmp_path / "new"
    context = multiprocessing.get_context("fork")
    ready, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_the_lock, args=(str(out.parent / "new"), ready, release))
    out.mkdir()
    holder.start()
    try:
        assert ready.wait(20)
        with pytest.raises(RunError, match="another equita run"):
            run(_options(out, datasets), log=lambda message: None)
        assert (out / LOCK_FILE).is_file()  # the holder's lock is still there: a third run is refused too
        with pytest.raises(RunError, match="another equita run"):
            run(_options(out, datasets), log=lambda message: None)
    finally:
        release.set()
        holder.join(20)


def test_a_rerun_that_cannot_compute_a_task_keeps_its_finished_result(tmp_path, datasets, scripted, monkeypatch):
    # D8: a server check that fails once must not replace a computed jobs result with "not computed".
    out = tmp_path / "run"
    finished = run(_options(out, datasets), log=lambda message: None)
    samples = (out / "samples.jsonl").read_text()
    logged: list[str] = []
    monkeypatch.setattr(scripted, "cannot", lambda request: "the log-probability check failed: <server>/completions: HTTP 503")
    (out / "requests.jsonl").write_text("")  # nothing cached: the task cannot be scored again
    again = run(_options(out, datasets), log=logged.append)
    assert again["tasks"]["jobs"]["results"] == finished["tasks"]["jobs"]["results"]
    assert (out / "samples.jsonl").read_text() == samples
    assert any("kept the earlier computed result" in line for line in logged), logged


def test_a_failed_server_check_with_every_answer_cached_still_scores(tmp_path, datasets, scripted, monkeypatch):
    out = tmp_path / "run"
    finished = run(_options(out, datasets), log=lambda message: None)
    logged: list[str] = []
    monkeypatch.setattr(scripted, "cannot", lambda request: "the log-probability check failed")
    again = run(_options(tmp_path / "run", datasets), log=logged.append)
    assert again["tasks"]["jobs"]["results"] == finished["tasks"]["jobs"]["results"]
    assert any("so the task is scored from it" in line for line in logged), logged


def _full_disk(target: str):
    """Writes of `target` fail as on a full disk, from the first byte."""
    import equita.runners.run as run_module

    original = run_module.write_atomic

    def write_atomic(path, text):
        if Path(path).name == target:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return original(path, text)

    return write_atomic


@pytest.mark.parametrize("target", ["samples.jsonl", "results.json"])
def test_a_full_disk_is_one_line_and_loses_no_answer(tmp_path, datasets, scripted, monkeypatch, target):
    # D16: the answers are in requests.jsonl already; the run says what could not be written.
    monkeypatch.setattr("equita.runners.run.write_atomic", _full_disk(target))
    code, output = invoke(["run", "--model", "scripted", "--out", "out", "--tasks", "jobs", "--datasets", str(datasets), "--limit", "2"], tmp_path, monkeypatch)
    assert code == 1 and "No space left on device" in output and "rerun the same command to resume" in output, output
    assert len((tmp_path / "out" / "requests.jsonl").read_text().splitlines()) > 0


ARGUMENTS = [
    # (case, extra arguments, --out, exit code, message): each refused before the model loads.
    ("an empty --out (an unset variable)", [], "", 2, "--out must name a results folder, not the current folder"),
    ("--out .", [], ".", 2, "--out must name a results folder"),
    ("a 300-character --out", [], "x" * 300, 1, "cannot be used: File name too long"),
    ("--push with a bad --results-repo", ["--push", "--results-repo", "bad id"], "out", 2, "--results-repo 'bad id': expected ORG/NAME"),
    ("--push with a bad --model-repo", ["--push", "--results-repo", "org/results", "--model-repo", "a/b/c"], "out", 2, "--model-repo 'a/b/c': expected ORG/NAME"),
    ("--bertscore-model without --bertscore-layers", ["--bertscore-model", "/models/bert"], "out", 2, "--bertscore-model needs --bertscore-layers"),
]  # fmt: skip


@pytest.mark.parametrize("case, extra, out, code, message", ARGUMENTS, ids=[a[0] for a in ARGUMENTS])
def test_run_refuses_bad_arguments_before_the_model_loads(tmp_path, datasets, monkeypatch, case, extra, out, code, message):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("equita.runners.run.load_model", no_model)
    before = tree(tmp_path)
    got, output = invoke(["run", "--model", "scripted", "--out", out, "--tasks", "jobs", "--datasets", str(datasets), *extra], tmp_path, monkeypatch)
    assert got == code and message in " ".join(output.split()), output
    assert len(output.strip().splitlines()) == 1, output
    assert tree(tmp_path) == before


def test_another_revision_is_named_where_the_short_forms_agree(tmp_path, datasets, scripted):
    # D25: "holds results of model fake-model@unpinned-ser, not fake-model@unpinned-ser".
    import dataclasses

    scripted.info = dataclasses.replace(scripted.info, revision="unpinned-server-1111")
    out = tmp_path / "run"
    run(_options(out, datasets), log=lambda message: None)
    results = json.loads((out / "results.json").read_text())
    results["model"]["revision"] = "unpinned-server-2222"
    (out / "results.json").write_text(json.dumps(results))
    with pytest.raises(RunError, match="scripted@unpinned-server-2222, not scripted@unpinned-server-1111;"):
        run(_options(out, datasets), log=lambda message: None)
