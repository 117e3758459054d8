"""The red-team probes of 2026-12-02 (shared/reviews/redteam-2026-12-02.md) for the request cache,
the disk and the command-line arguments, one table per area: each probe ends in a reported cache
line or a one-line message with its exit code, no traceback, and no file changed outside the
folder the command writes.

Runs use the scripted model of fake_model.py (the cache and the messages are under test, not a
model); a full disk, a read-only file system and a busy mount point are simulated by making the
system call fail with its errno, as no test can mount anything. A 300-character name is real."""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from equita.builders import common
from equita.runners.cache import CacheError, RequestCache
from equita.runners.requests import Generate, Loglikelihood
from fake_model import ScriptedModel
from test_probes import GFLIT_RECORD, UPSTREAM, invoke, jobs_datasets, tree  # noqa: F401 (jobs_datasets: a fixture)
from test_untrusted_results import _results as valid_results

# -- the cache: every damaged line the report tried is reported with its number and recomputed ----

THREE = Loglikelihood(user="Ingegnere è una professione da", continuations=(" uomo", " donna", " donne"), chat=False)
GOOD = {"logprobs": [-1.0, -2.0, -3.0], "greedy": [False, False, True]}
TEXT = Generate(user="Rispondi.", max_new_tokens=8)


def _line(response, key="k", ensure_ascii=True) -> str:
    return json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": key, "response": response}, ensure_ascii=ensure_ascii)


def messages(output: str) -> list[str]:
    """The lines a command printed, less a run's progress bars (tqdm's, on stderr too, redrawn after "\\r")."""
    return [line for line in output.split("\n") if line.strip() and "req/s]" not in line]


def _logprob(raw: str) -> str:
    """A line whose second log-probability is `raw`, written as the JSON text itself (-Infinity, 400 digits)."""
    return _line({"logprobs": [-1.0, 12345.0, -3.0], "greedy": [False] * 3}).replace("12345.0", raw)


# (case, the damaged line(s) after one good line, the request asked of them, the reported problem)
CACHE = [
    ("a 400-digit integer (D14)", [_logprob("-" + "1" * 400)], THREE, "line 2: the cached answer does not fit its request "
     "(log-probability is an integer of about 400 digits, too large for a float)"),
    ("a 5,000-digit integer", [_logprob("-" + "1" * 5000)], THREE, "line 2: holds a number too long to read"),
    ("-Infinity (D15)", [_logprob("-Infinity")], THREE, "line 2: the cached answer does not fit its request (log-probability -inf is not a finite number <= 0)"),
    ("Infinity", [_logprob("Infinity")], THREE, "line 2: the cached answer does not fit its request (log-probability inf is not a finite number <= 0)"),
    ("NaN", [_logprob("NaN")], THREE, "line 2: the cached answer does not fit its request (log-probability nan is not a finite number <= 0)"),
    ("positive", [_logprob("0.5")], THREE, "(log-probability 0.5 is not a finite number <= 0)"),
    ("a boolean", [_logprob("true")], THREE, "(log-probability True is not a number)"),
    ("the wrong count", [_line({"logprobs": [-1.0, -2.0], "greedy": [False, True]})], THREE, "(2 log-probabilities and 2 greedy flags for 3 continuations)"),
    ("greedy not a boolean", [_line({"logprobs": [-1.0, -2.0, -3.0], "greedy": [0, 1, 0]})], THREE, "(greedy flags must be true or false)"),
    ("text not a string", [_line({"text": 3})], TEXT, "line 2: not a cache entry"),
    ("torn", ['{"model": "r", "task"'], THREE, "line 2: not valid JSON"),
    ("not UTF-8", [_line({"text": "caffè"}, ensure_ascii=False).encode("latin-1")], TEXT, "line 2: not UTF-8"),
    ("100,000 deep", ["[" * 100_000 + "]" * 100_000], THREE, "line 2: nested too deeply"),
    ("two different answers", [_line(GOOD), _line({**GOOD, "logprobs": [-5.0, -0.1, -3.0]})], THREE,
     "lines 2, 3 answer the same request differently; all set aside"),
]  # fmt: skip


@pytest.mark.parametrize("case, damaged, asked, problem", CACHE, ids=[c[0] for c in CACHE])
def test_a_damaged_cache_line_is_reported_and_recomputed(tmp_path, case, damaged, asked, problem):
    path = tmp_path / "out" / "requests.jsonl"
    path.parent.mkdir()
    (tmp_path / "notes.txt").write_text("a user's file")
    lines = [_line(GOOD, key="ok").encode(), *(line if isinstance(line, bytes) else line.encode() for line in damaged)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = tree(tmp_path)
    cache = RequestCache(path)
    assert cache.get("r", "t", "v", "ok", THREE) == GOOD  # the good line is still used
    assert cache.get("r", "t", "v", "k", asked) is None  # the damaged one is recomputed ...
    assert len(cache.problems) == 1 and problem in cache.problems[0] and cache.problems[0].endswith("its request is recomputed"), cache.problems
    answer = GOOD if asked is THREE else {"text": "sì"}
    cache.add("r", "t", "v", [("k", answer)])  # ... and its new answer wins on the next read
    assert RequestCache(path).get("r", "t", "v", "k", asked) == answer
    assert {k: v for k, v in tree(tmp_path).items() if k != "out/requests.jsonl"} == {k: v for k, v in before.items() if k != "out/requests.jsonl"}


@pytest.mark.parametrize("value, shown", [(-math.inf, "-inf"), (math.inf, "inf"), (math.nan, "nan")])
def test_a_non_finite_answer_is_an_error_and_never_written(tmp_path, value, shown):
    path = tmp_path / "requests.jsonl"
    cache = RequestCache(path)
    cache.add("r", "t", "v", [("a", GOOD)])
    before = path.read_bytes()
    with pytest.raises(CacheError, match=rf"requests.jsonl: the answer to t request b holds a non-finite number \({shown}\)"):
        cache.add("r", "t", "v", [("c", GOOD), ("b", {"logprobs": [-1.0, value, -3.0], "greedy": [False] * 3})])
    assert path.read_bytes() == before  # not even the finite answer of the same batch
    assert cache.get("r", "t", "v", "c", THREE) is None


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, jobs_datasets) -> Path:
    """A jobs run of the scripted model with its requests.jsonl, copied by each probe that damages it."""
    folder = tmp_path_factory.mktemp("first")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: ScriptedModel())
        code, output = invoke(["run", "--model", "scripted", "--out", "out", "--tasks", "jobs", "--limit", "1", "--datasets", str(jobs_datasets)], folder, monkeypatch)
    assert code == 0, output
    return folder / "out"


@pytest.mark.parametrize("raw, problem", [("-" + "1" * 400, "is an integer of about 400 digits, too large for a float"), ("-Infinity", "-inf is not a finite number <= 0")])
def test_a_rerun_recomputes_a_damaged_line_and_gets_the_same_results(tmp_path, monkeypatch, first_run, jobs_datasets, raw, problem):
    out = tmp_path / "out"
    shutil.copytree(first_run, out)
    lines = (out / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[0])
    entry["response"]["logprobs"][0] = 12345.0
    lines[0] = json.dumps(entry).replace("12345.0", raw)
    (out / "requests.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    model = ScriptedModel()
    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: model)
    code, output = invoke(["run", "--model", "scripted", "--out", "out", "--tasks", "jobs", "--limit", "1", "--datasets", str(jobs_datasets)], tmp_path, monkeypatch)
    assert code == 0, output
    assert f"requests.jsonl line 1: the cached answer does not fit its request (log-probability {problem})" in output
    assert model.asked == [1]  # that request only, once
    again, first = (json.loads((folder / "results.json").read_text())["tasks"]["jobs"]["results"] for folder in (out, first_run))
    assert again == first
    assert (out / "samples.jsonl").read_bytes() == (first_run / "samples.jsonl").read_bytes()


def test_a_non_finite_answer_of_the_model_stops_the_run_naming_the_request(tmp_path, monkeypatch, jobs_datasets):
    class MinusInfinity(ScriptedModel):
        def _one(self, request):
            answer = super()._one(request)
            return {**answer, "logprobs": [-math.inf, *answer["logprobs"][1:]]}

    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: MinusInfinity())
    before = tree(tmp_path)
    code, output = invoke(["run", "--model", "scripted", "--out", "out", "--tasks", "jobs", "--limit", "1", "--datasets", str(jobs_datasets)], tmp_path, monkeypatch)
    assert code == 1 and len(messages(output)) == 1, output
    assert "run failed: out/requests.jsonl: the answer to jobs request " in output and "holds a non-finite number (-inf)" in output
    assert tree(tmp_path) == before  # the run made out/ and, having saved nothing, removed it


# -- the disk: full, read-only, busy, names too long ------------------------------------------------


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _full_disk_at_the_cache(monkeypatch):
    monkeypatch.setattr("equita.runners.cache.os.fsync", _no_space)  # the data is written, its flush to disk fails


def _full_disk_at_samples(monkeypatch):
    def refuse(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr("equita.runners.run.write_atomic", refuse)


def _full_disk_at_the_plots(monkeypatch):
    def refuse(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(Figure, "savefig", refuse)


def _read_only_file_system(monkeypatch):
    def refuse(*args, dir=None, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))

    monkeypatch.setattr(common.tempfile, "mkdtemp", refuse)


def _busy_mount_point(monkeypatch):
    (Path.cwd() / "mnt").mkdir()  # an empty folder that a mount point would be; renaming onto it fails

    def refuse(first, second):
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(second))

    monkeypatch.setattr(common, "_exchange", refuse)


def _results_folder(monkeypatch):
    (Path.cwd() / "res").mkdir()
    (Path.cwd() / "res" / "results.json").write_text(json.dumps(valid_results()))


LONG = "a" * 300
RUN = ["run", "--model", "scripted", "--tasks", "jobs", "--limit", "1"]
# (case, arguments (--datasets is added to a run), what goes wrong, the folder it may change, exit code, message)
DISK = [
    ("D16: full disk while appending to the cache", [*RUN, "--out", "out"], _full_disk_at_the_cache, "out", 1,
     "run failed: no space left on device: out/requests.jsonl (the answers of earlier batches are saved"),
    ("D16: full disk while writing samples.jsonl", [*RUN, "--out", "out"], _full_disk_at_samples, "out", 1, "out/samples.jsonl: No space left on device"),
    ("D16: full disk while the run draws the plots", [*RUN, "--out", "out"], _full_disk_at_the_plots, "out", 1, "No space left on device"),
    ("D16: full disk while the report draws the plots", ["report", "res"], lambda m: (_results_folder(m), _full_disk_at_the_plots(m)), "res", 1,
     "res: cannot be written (No space left on device)"),
    ("D19: build below a read-only file system", ["build", "jobs", "--out", "ro/jobs"], _read_only_file_system, "ro", 1,
     "build failed: ro/jobs: cannot be written (Read-only file system)"),
    ("D19: build --force onto an empty mount point", ["build", "jobs", "--out", "mnt", "--force"], _busy_mount_point, None, 1,
     "build failed: mnt: cannot be written (Device or resource busy); it is in use, a mount point perhaps"),
    ("D19: build with a 300-character --out", ["build", "jobs", "--out", LONG], None, None, 1,
     f"build failed: {LONG}: cannot be used: File name too long (one of its names has 300 bytes)"),
    ("D19: run with a 300-character --out", [*RUN, "--out", LONG], None, None, 1, f"--out {LONG}: cannot be used: File name too long"),
    ("D19: report with a 300-character --out", ["report", "res", "--out", LONG], _results_folder, None, 1, f"--out {LONG}: cannot be used: File name too long"),
]  # fmt: skip


@pytest.mark.parametrize("case, args, fault, target, code, message", DISK, ids=[c[0] for c in DISK])
def test_disk_faults_are_one_line_errors(tmp_path, monkeypatch, jobs_datasets, case, args, fault, target, code, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("equita.runners.run.load_model", lambda *a, **k: ScriptedModel())
    if fault is not None:
        fault(monkeypatch)
    before = tree(tmp_path)
    extra = ["--datasets", str(jobs_datasets)] if args[0] == "run" else []
    got, output = invoke([*args, *extra], tmp_path, monkeypatch)
    assert got == code and len(messages(output)) == 1, output
    assert message in output, output
    after = tree(tmp_path)
    if target is not None:  # what the command writes may change (a run's answers so far stay saved); nothing else
        before, after = ({k: v for k, v in t.items() if k != target and not k.startswith(target + "/")} for t in (before, after))
    assert after == before
    if args[0] == "run" and (tmp_path / "out" / "requests.jsonl").exists():
        assert RequestCache(tmp_path / "out" / "requests.jsonl").problems == []  # no torn line left behind


def test_a_failed_cache_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "requests.jsonl"
    cache = RequestCache(path)
    cache.add("r", "t", "v", [("a", GOOD)])
    before = path.read_bytes()
    monkeypatch.setattr("equita.runners.cache.os.fsync", _no_space)
    with pytest.raises(CacheError, match=f"^no space left on device: {path} "):
        cache.add("r", "t", "v", [("b", GOOD)])
    assert path.read_bytes() == before  # the line that was written before the failure is cut away
    assert cache.get("r", "t", "v", "b", THREE) is None  # and not taken for saved


# -- arguments -------------------------------------------------------------------------------------


def _gfl_it_with(text: str):
    def write(tmp: Path) -> list[str]:
        (tmp / "gfl.json").write_text(text, encoding="utf-8")
        return ["build", "gfg", "--out", "gfg", "--source-dir", str(UPSTREAM), "--gfl-it", "gfl.json"]

    return write


def _bertscore_without_layers(tmp: Path) -> list[str]:
    (tmp / "encoder").mkdir()
    return ["run", "--model", "scripted", "--out", "out", "--tasks", "gfg-detection-neogate", "--limit", "1", "--bertscore-model", "encoder"]


ARGS = [
    # (case, the command (made in tmp), exit code, message)
    ("D30: bench --limit with a misspelt workload", lambda tmp: ["bench", "--limit", "nope=5"], 1, "--limit nope: unknown workload; valid: itap-at, jobs, gfg, suite"),
    ("bench --limit for a workload not run", lambda tmp: ["bench", "--workloads", "jobs", "--limit", "gfg=5"], 1,
     "--limit gfg: not among the workloads run (jobs); add it to --workloads or drop the limit"),
    ("bench --limit twice", lambda tmp: ["bench", "--limit", "jobs=5", "--limit", "jobs=6"], 2, "--limit jobs is given twice"),
    ("bench --limit 0", lambda tmp: ["bench", "--limit", "jobs=0"], 2, "--limit jobs=0: use WORKLOAD=N (N >= 1) or WORKLOAD=all"),
    ("D26: --bertscore-model without --bertscore-layers", _bertscore_without_layers, 2, "--bertscore-model needs --bertscore-layers N"),
    ("D24: GFL-it with a JSON-escaped lone surrogate", _gfl_it_with('[{"id_text": "t1", "text": "Il direttore \\ud800 arrivato.", "list_spans": []}]'), 1,
     "gfl.json: record 1: text holds a lone surrogate (\\ud800, a JSON escape that is no text) at character 13"),
    ("GFL-it with a JSON-escaped NUL", _gfl_it_with(json.dumps([{**GFLIT_RECORD, "rewritten_texts_1": ["La comunità\u0000"]}])), 1,
     "gfl.json: record 1: rewritten_texts_1[0] holds NUL (\\u0000"),
]  # fmt: skip


@pytest.mark.parametrize("case, command, code, message", ARGS, ids=[c[0] for c in ARGS])
def test_bad_arguments_are_refused_before_any_work(tmp_path, monkeypatch, jobs_datasets, case, command, code, message):
    args = command(tmp_path)
    if args[0] == "run":
        args += ["--datasets", str(jobs_datasets)]
    monkeypatch.setattr("equita.runners.run.load_model", lambda *a, **k: pytest.fail("the model was loaded before the arguments were checked"))
    monkeypatch.setattr("equita.runners.bench.bench.load_model", lambda *a, **k: pytest.fail("the model was loaded before the arguments were checked"))
    before = tree(tmp_path)
    got, output = invoke(args, tmp_path, monkeypatch)
    assert got == code and len(messages(output)) == 1, output
    assert message in output, output
    assert tree(tmp_path) == before
