"""The red-team probes of issue 15, at the command line: each bad input gets exit code 1 or 2, a
one-line message naming the file, line or field and what is wrong, no traceback, and leaves the
files on disk exactly as they were.

The commands run in this process (typer's test runner), so an uncaught exception shows up as
`result.exception`. Areas: build sources, run options and models, report, publish and submit.
The cache, the results schema and the metrics have their own tables (test_runner_units,
test_untrusted_results, test_itap_at_errors, test_metric_text_normalisation)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import UPSTREAM
from equita.builders import gfg, jobs
from equita.runners.cli import app

GFLIT_RECORD = {
    "id_text": "t1", "text": "Gli studenti sono arrivati.",
    "list_spans": [{"span": "Gli studenti", "start": 0, "end": 12, "labels": ["MASC-GEN"], "key_span": "studenti"}],
    "rewritten_texts_1": ["La comunità studentesca è arrivata."],
}  # fmt: skip


def tree(root: Path) -> dict[str, str]:
    """Every entry under `root` with its content hash: what must not change."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        for p in sorted(root.rglob("*"))
    }


def invoke(args: list[str], cwd: Path, monkeypatch) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("EQUITA_SOURCE_DIR", raising=False)
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback instead of a message: {type(result.exception).__name__}: {result.exception}")
    return result.exit_code, result.output


def record(**changes) -> dict:
    return {**GFLIT_RECORD, **changes}


def span(**changes) -> dict:
    return record(list_spans=[{**GFLIT_RECORD["list_spans"][0], **changes}])


def gente_mirror(tmp: Path, content: bytes) -> Path:
    """A mirror whose GeNTE is the full, unpinned GeNTE.tsv (the Hub's file) with `content`."""
    mirror = tmp / "mirror"
    neogate = gfg.NEOGATE.mirror_path(mirror)
    neogate.parent.mkdir(parents=True)
    neogate.symlink_to(gfg.NEOGATE.mirror_path(UPSTREAM))
    gente = gfg.GENTE.mirror_path(mirror)
    gente.parent.mkdir(parents=True, exist_ok=True)
    gente.write_bytes(content)
    return mirror


def set_n_lines() -> list[bytes]:
    return gfg.GENTE_SET_N.mirror_path(UPSTREAM).read_bytes().split(b"\n")


# (case, files to write under tmp (name -> bytes | JSON-able), extra args, exit code, message)
GFL_IT = [
    ("not UTF-8", {"gfl.jsonl": b'{"id_text": "a", "text": "caff\xe8"}\n'}, "gfl.jsonl:1: not UTF-8 (byte 0xe8"),
    ("missing", {}, "gfl.jsonl: not found"),
    ("a folder", {"gfl.jsonl/x": b""}, "gfl.jsonl: not a file"),
    ("100,000-deep JSON", {"gfl.jsonl": b"[" * 100_000 + b"]" * 100_000}, "gfl.jsonl:1: JSON nested too deeply"),
    ("JSON lines, bad line 3", {"gfl.jsonl": (json.dumps(record()) + "\n" + json.dumps(record(id_text="t2")) + "\n{oops\n").encode()},
     "gfl.jsonl:3: not valid JSON"),
    ("NUL byte", {"gfl.jsonl": json.dumps(record()).encode() + b"\n\x00\n"}, "gfl.jsonl:2: NUL byte"),
    ("offsets as strings", {"gfl.jsonl": json.dumps(span(start="0")).encode()}, "span 0 offsets must be integers (character positions), got start='0'"),
    ("offsets as floats", {"gfl.jsonl": json.dumps(span(end=12.0)).encode()}, "got start=0 end=12.0"),
    ("null id", {"gfl.jsonl": json.dumps(record(id_text=None)).encode()}, "record 1: id_text None must be a non-empty string or an integer"),
    ("NaN id", {"gfl.jsonl": b'{"id_text": NaN, "text": "x", "list_spans": []}'}, "record 1: id_text nan must be"),
    ("a JSON object that is not a record", {"gfl.jsonl": b'{\n  "data": []\n}\n'}, "record 1: missing 'id_text'"),
]  # fmt: skip


@pytest.mark.parametrize("case, files, message", GFL_IT, ids=[c[0] for c in GFL_IT])
def test_build_refuses_a_bad_gfl_it_file(tmp_path, monkeypatch, case, files, message):
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    before = tree(tmp_path)
    code, output = invoke(["build", "gfg", "--out", "out", "--source-dir", str(UPSTREAM), "--gfl-it", "gfl.jsonl"], tmp_path, monkeypatch)
    assert (code, output.count("\n")) == (1, 1), output
    assert message in output
    assert tree(tmp_path) == before


def test_a_pretty_printed_gfl_it_record_is_read(tmp_path, monkeypatch):
    (tmp_path / "gfl.json").write_text(json.dumps(record(), indent=2, ensure_ascii=False), encoding="utf-8")
    code, output = invoke(["build", "gfg", "--out", "out", "--source-dir", str(UPSTREAM), "--gfl-it", "gfl.json"], tmp_path, monkeypatch)
    assert code == 0, output
    assert "detection-gflit/test.parquet" in output


GENTE = [
    ("NUL byte", lambda lines: b"\n".join([*lines[:4], lines[4].replace(b"\t", b"\x00\t", 1), *lines[5:]]), "GeNTE.tsv:5: NUL byte"),
    ("not UTF-8", lambda lines: b"\n".join([*lines[:9], lines[9] + b" \xff", *lines[10:]]), "GeNTE.tsv:10: not UTF-8 (byte 0xff"),
    ("Set-N only, as the full file", lambda lines: b"\n".join(lines), "rows per set {'Set-G': 0, 'Set-N': 750}"),
]  # fmt: skip


@pytest.mark.parametrize("case, content, message", GENTE, ids=[c[0] for c in GENTE])
def test_build_refuses_a_bad_unpinned_gente(tmp_path, monkeypatch, case, content, message):
    mirror = gente_mirror(tmp_path, content(set_n_lines()))
    before = tree(tmp_path)
    code, output = invoke(["build", "gfg", "--out", "out", "--source-dir", str(mirror)], tmp_path, monkeypatch)
    assert code == 1 and message in output, output
    assert tree(tmp_path) == before


@pytest.fixture(scope="module")
def jobs_datasets(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("datasets")
    jobs.build(folder / "jobs")
    return folder


def _truncated_gguf(tmp: Path) -> str:
    from equita.runners.backends.sources import embedded_gguf

    (tmp / "cut.gguf").write_bytes(embedded_gguf("smollm2").read_bytes()[:5000])
    return "cut.gguf"


def _file(tmp: Path) -> str:
    (tmp / "taken").write_text("a user's file")
    return "taken"


def _out_holding_a_folder(name: str):
    def make(tmp: Path) -> str:
        (tmp / "out" / name).mkdir(parents=True)
        return "out"

    return make


RUN = [
    ("requests.jsonl is a folder", "smollm2", _out_holding_a_folder("requests.jsonl"), [], 1, "--out out: requests.jsonl is a folder"),
    ("results.json is a folder", "smollm2", _out_holding_a_folder("results.json"), [], 1, "--out out: results.json is a folder"),
    ("the lock is a folder", "smollm2", _out_holding_a_folder(".equita.lock"), [], 1, "--out out: .equita.lock is a folder"),
    # (case, --model, --out (made by a function of tmp), extra, exit code, message)
    ("--out is a file", "smollm2", _file, [], 1, "--out taken: is a file, not a folder"),
    ("--out below a file", "smollm2", lambda tmp: _file(tmp) + "/inside", [], 1, "taken is a file, so no folder can be made below it"),
    ("--out cannot be written", "smollm2", lambda tmp: "/proc/equita-probe", [], 1, "--out /proc/equita-probe: cannot be written"),
    ("a GGUF cut to 5 KB", _truncated_gguf, lambda tmp: "out", [], 1, "cut.gguf: cannot be loaded as a GGUF model by transformers"),
    ("a .gguf that is missing", lambda tmp: "missing.gguf", lambda tmp: "out", [], 1, "no such GGUF file"),
    ("a Hub id with ..", lambda tmp: "org/na..me", lambda tmp: "out", [], 1, "not a valid Hub id (Cannot have -- or .. in repo_id"),
    ("a Hub id with a space", lambda tmp: "my org/model", lambda tmp: "out", [], 1, "not a valid Hub id"),
    ("a folder that is no checkpoint", lambda tmp: str(tmp), lambda tmp: "out", [], 1, "has no config.json"),
    ("an unknown task", "smollm2", lambda tmp: "out", ["--tasks", "itap-at,nope"], 2, "nope"),
    ("--limit 0", "smollm2", lambda tmp: "out", ["--limit", "0"], 2, "--limit"),
    ("an empty --model", lambda tmp: "", lambda tmp: "out", [], 1, "--model is empty"),
    ("a device that is none", "smollm2", lambda tmp: "out", ["--device", "tpu"], 1, "--device 'tpu': not a device equita runs on"),
    ("a CUDA device past the last", "smollm2", lambda tmp: "out", ["--device", "cuda:99"], 1, "--device cuda:99:"),
    ("a dtype equita does not run", "smollm2", lambda tmp: "out", ["--dtype", "float64"], 1, "--dtype 'float64': use auto"),
    ("--server without a scheme", "served", lambda tmp: "out", ["--server", "127.0.0.1:8000"], 1, "give the server's base URL"),
    ("--tokenizer without --server", "smollm2", lambda tmp: "out", ["--tokenizer", "smollm2"], 2, "apply with --server only"),
    ("--device with --server", "served", lambda tmp: "out", ["--server", "http://127.0.0.1:9/v1", "--device", "cpu"], 2, "are the server's settings"),
    ("a server that is not there", "served", lambda tmp: "out", ["--server", "http://127.0.0.1:9/v1", "--max-retries", "0"], 1,
     "/v1/models: no answer after 0 retries (ConnectionError"),
]  # fmt: skip


@pytest.mark.parametrize("case, model, out, extra, code, message", RUN, ids=[c[0] for c in RUN])
def test_run_refuses_bad_options_before_writing_anything(tmp_path, monkeypatch, jobs_datasets, case, model, out, extra, code, message):
    model = model if isinstance(model, str) else model(tmp_path)
    out = out(tmp_path)
    before = tree(tmp_path)
    got, output = invoke(["run", "--model", model, "--out", out, "--tasks", "jobs", "--datasets", str(jobs_datasets), *extra], tmp_path, monkeypatch)
    assert got == code and message in output, output
    assert tree(tmp_path) == before  # no results folder left behind, nothing lost


def _results(tmp: Path, text: bytes) -> str:
    (tmp / "res").mkdir()
    (tmp / "res" / "results.json").write_bytes(text)
    return "res"


REPORT = [
    ("no such folder", lambda tmp: "nowhere", "nowhere"),
    ("not UTF-8", lambda tmp: _results(tmp, b'{"schema": "caf\xe8"}'), "not UTF-8"),
    ("not JSON", lambda tmp: _results(tmp, b'{"schema": '), "not valid JSON"),
    ("deeply nested", lambda tmp: _results(tmp, b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
    ("not an object", lambda tmp: _results(tmp, b"[1, 2]"), "not a JSON object"),
    ("a missing key", lambda tmp: _results(tmp, b'{"schema": "equita.results/1"}'), "missing"),
]  # fmt: skip


@pytest.mark.parametrize(
    "case, datasets, message",
    [("a file", lambda tmp: _file(tmp), "--datasets taken: is a file"), ("empty", lambda tmp: "", "--datasets is empty")],
)
def test_run_refuses_a_datasets_option_that_names_nothing(tmp_path, monkeypatch, case, datasets, message):
    value = datasets(tmp_path)
    before = tree(tmp_path)
    code, output = invoke(["run", "--model", "smollm2", "--out", "out", "--tasks", "jobs", "--datasets", value], tmp_path, monkeypatch)
    assert code == 1 and message in output, output
    assert tree(tmp_path) == before


@pytest.mark.parametrize("command", ["report", "bench"])
@pytest.mark.parametrize("out, message", [("taken", "--out taken: is a file, not a folder"), ("taken/below", "taken is a file, so no folder")])
def test_report_and_bench_refuse_an_out_that_cannot_be_a_folder(tmp_path, monkeypatch, command, out, message):
    _file(tmp_path)
    from test_untrusted_results import _results as valid_results

    _results(tmp_path, json.dumps(valid_results()).encode())  # a valid results folder: only --out is wrong
    args = ["report", "res", "--out", out] if command == "report" else ["bench", "--out", out, "--tools", "equita"]
    before = tree(tmp_path)
    code, output = invoke(args, tmp_path, monkeypatch)
    assert code == 1 and message in output, output
    assert tree(tmp_path) == before


@pytest.mark.parametrize("case, folder, message", REPORT, ids=[c[0] for c in REPORT])
def test_report_refuses_a_bad_results_folder(tmp_path, monkeypatch, case, folder, message):
    name = folder(tmp_path)
    before = tree(tmp_path)
    code, output = invoke(["report", name], tmp_path, monkeypatch)
    assert code == 1 and message in output, output
    assert tree(tmp_path) == before


def _build_with_card(tmp: Path, card_header: str) -> str:
    jobs.build(tmp / "jobs")
    card = tmp / "jobs" / "README.md"
    card.write_text(card.read_text(encoding="utf-8").replace("---\n", f"---\n{card_header}\n", 1), encoding="utf-8")
    # A crafted folder is crafted whole: its manifest matches the changed card.
    manifest = tmp / "jobs" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["files"]["README.md"]["sha256"] = hashlib.sha256(card.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(data))
    return "jobs"


def _build_with_manifest_entry(tmp: Path, name: str) -> str:
    jobs.build(tmp / "jobs")
    manifest = tmp / "jobs" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["files"][name] = {"bytes": 1, "sha256": "0" * 64}
    manifest.write_text(json.dumps(data))
    return "jobs"


HUB = [
    # (case, command made from tmp, message); all refused before any request (no Hub runs here)
    ("publish: a crafted YAML tag in the card", lambda tmp: ["publish", _build_with_card(tmp, "x: !!python/object/apply:os.system ['true']"),
     "--repo-id", "equita/jobs", "--version", jobs.VERSION], "the card's YAML header cannot be read"),
    ("publish: a manifest naming ../", lambda tmp: ["publish", _build_with_manifest_entry(tmp, "../outside.txt"), "--repo-id", "equita/jobs",
     "--version", jobs.VERSION], "manifest entry '..' cannot name a file"),
    ("publish: an absolute manifest entry", lambda tmp: ["publish", _build_with_manifest_entry(tmp, "/etc/hostname"), "--repo-id", "equita/jobs",
     "--version", jobs.VERSION], "cannot name a file"),
    ("publish: a Hub id with ..", lambda tmp: ["publish", "jobs", "--repo-id", "equita/jo..bs", "--version", "2.0.0"], "--repo-id 'equita/jo..bs': not a valid Hub repository id"),
    ("publish-metric: three parts", lambda tmp: ["publish-metric", "m", "--repo-id", "a/b/c"], "--repo-id 'a/b/c': expected ORG/NAME"),
    ("submit: no slash", lambda tmp: ["submit", "res", "--results-repo", "results"], "--results-repo 'results': expected ORG/NAME"),
    ("submit: a bad model repo", lambda tmp: ["submit", "res", "--results-repo", "o/r", "--model-repo", "o/-m"], "--model-repo 'o/-m': not a valid Hub repository id"),
    ("submit: a datasets org with /", lambda tmp: ["submit", "res", "--results-repo", "o/r", "--datasets-org", "a/b"], "--datasets-org 'a/b': an organisation name"),
]  # fmt: skip


@pytest.mark.parametrize("case, command, message", HUB, ids=[c[0] for c in HUB])
def test_hub_commands_refuse_bad_input_before_any_request(tmp_path, monkeypatch, case, command, message):
    args = command(tmp_path)
    before = tree(tmp_path)
    code, output = invoke(args, tmp_path, monkeypatch)
    assert code == 1 and message in output, output
    assert tree(tmp_path) == before


def test_run_refuses_a_cache_folder_that_is_a_file(tmp_path, monkeypatch, jobs_datasets):
    _file(tmp_path)
    monkeypatch.setenv("EQUITA_CACHE_DIR", str(tmp_path / "taken"))
    before = tree(tmp_path)
    code, output = invoke(["run", "--model", "smollm2", "--out", "out", "--tasks", "jobs", "--datasets", str(jobs_datasets)], tmp_path, monkeypatch)
    assert code == 1 and "$EQUITA_CACHE_DIR" in output and "is a file, not a folder" in output, output
    assert tree(tmp_path) == before
