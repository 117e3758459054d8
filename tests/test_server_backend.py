"""The OpenAI-compatible server backend against a loopback server that speaks vLLM's subset of the
protocol with an in-process model (openai_server.py): with SmolLM2, the same scores as in process
and a server with wrong prompt log-probabilities refused for the log-likelihood tasks only; with a
tiny random Llama (plumbing: one forward costs ~1 ms, not SmolLM2's ~200 ms at batch 1), faults
retried with nothing lost, a crashed run resumed, and the API key never written anywhere."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest

import openai_server
from equita.runners.errors import ModelError
from equita.runners.run import RunOptions, run

TASKS = "jobs,itap-at,itap-at-logprob"
LIMIT = 2
KEY = "sk-equita-test-0123456789abcdef"


@contextlib.contextmanager
def _serving(model):
    state = openai_server.State(model=model)
    httpd = openai_server.serve(state)
    state.url = f"http://127.0.0.1:{httpd.server_port}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture()
def server(smollm2):
    with _serving(smollm2) as state:
        yield state


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from equita.runners.backends.models import load_model

    return load_model(str(tiny_model_dir))


@pytest.fixture()
def tiny_server(tiny):
    with _serving(tiny) as state:
        yield state


@pytest.fixture(scope="module")
def in_process(tmp_path_factory, datasets, smollm2) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("in-process") / "run"
    return out, run(RunOptions(model="smollm2", out=out, tasks=TASKS, datasets=str(datasets), limit=LIMIT, batch_size=4), log=lambda m: None)


@pytest.fixture(scope="module")
def tiny_in_process(tmp_path_factory, datasets, tiny_model_dir, tiny) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("tiny-in-process") / "run"
    return out, run(RunOptions(model=str(tiny_model_dir), out=out, tasks="jobs", datasets=str(datasets), limit=LIMIT), log=lambda m: None)


def through(state, out: Path, datasets: Path, logs: list | None = None, **settings) -> dict:
    options = {"model": state.name, "out": out, "tasks": TASKS, "datasets": str(datasets), "limit": LIMIT, "server": state.url,
               "concurrency": 4, "request_timeout": 120.0, "max_retries": 3, **settings}  # fmt: skip
    return run(RunOptions(**options), log=(logs.append if logs is not None else lambda m: None))


def samples(out: Path) -> dict:
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    return {(row["task"], row["id"]): row for row in rows}


def assert_same_scores(results: dict, out: Path, in_process: tuple[Path, dict]) -> None:
    reference_out, reference = in_process
    ours, theirs = samples(out), samples(reference_out)
    assert ours.keys() == theirs.keys()
    for key, row in ours.items():
        if "logprobs" in row["response"]:
            assert row["response"]["logprobs"] == pytest.approx(theirs[key]["response"]["logprobs"], abs=1e-4), key
        else:
            assert row["response"]["text"] == theirs[key]["response"]["text"], key
    for name in ("jobs", "itap-at", "itap-at-logprob"):
        assert results["tasks"][name]["results"]["bias_score"] == pytest.approx(reference["tasks"][name]["results"]["bias_score"], abs=1e-4)


def test_a_run_through_the_server_scores_what_an_in_process_run_scores(server, datasets, in_process, tmp_path):
    results = through(server, tmp_path / "run", datasets)
    assert results["model"]["backend"] == "openai-server" and results["model"]["revision"].startswith("unpinned-server:")
    assert_same_scores(results, tmp_path / "run", in_process)
    # Log-likelihood went as token ids with echo; generation as chat messages, greedy and explicit.
    echoes = [payload for path, payload in server.seen if path == "/v1/completions" and payload.get("echo")]
    assert echoes and all(isinstance(p["prompt"], list) and p["logprobs"] == 1 for p in echoes)
    chats = [payload for path, payload in server.seen if path == "/v1/chat/completions"]
    assert chats and all((p["temperature"], p["top_p"], p["top_k"], p["max_tokens"]) == (0.0, 1.0, -1, 32) for p in chats)
    assert str(server.url) not in (tmp_path / "run" / "results.json").read_text()  # the lab's address is not recorded


FAULTS = [
    ("429 with Retry-After", [("status", 429, 1)]),
    ("500", [("status", 500)]),
    ("a dropped connection", [("drop",)]),
    ("an answer past the timeout", [("slow", 6)]),
    ("all of them", [("status", 503, 1), ("drop",), ("status", 500), ("slow", 6)]),
]


@pytest.mark.parametrize("case, faults", FAULTS, ids=[f[0] for f in FAULTS])
def test_faults_are_retried_and_change_no_answer(tiny_server, datasets, tiny_in_process, tmp_path, case, faults):
    server = tiny_server
    server.faults = list(faults)
    started = time.monotonic()
    # Faults can meet one request in a row (the first ones are sent alone): enough retries for all of them.
    results = through(server, tmp_path / "run", datasets, tasks="jobs", request_timeout=3.0, max_retries=len(faults) + 1)
    assert server.faults == []  # every fault was met
    if any(f[0] == "status" and len(f) > 2 for f in faults):
        assert time.monotonic() - started >= 1.0  # Retry-After was honoured
    reference = samples(tiny_in_process[0])
    for key, row in samples(tmp_path / "run").items():
        assert row["response"]["logprobs"] == pytest.approx(reference[key]["response"]["logprobs"], abs=1e-4)
    assert results["tasks"]["jobs"]["timings"]["computed"] == results["tasks"]["jobs"]["timings"]["requests"]


def test_a_crashed_run_resumes_with_nothing_recomputed(tiny_server, datasets, tiny_in_process, tmp_path):
    server = tiny_server
    server.fail_after = 20  # the server goes down after scoring 20 continuations (of 48)
    with pytest.raises(ModelError, match="no answer after 1 retries|HTTP 500"):
        through(server, tmp_path / "run", datasets, tasks="jobs", max_retries=1)
    saved = (tmp_path / "run" / "requests.jsonl").read_text().count("\n")
    assert 0 < saved < 12  # some sentences answered and saved, not all
    server.fail_after, server.seen = None, []
    results = through(server, tmp_path / "run", datasets, tasks="jobs")
    timings = results["tasks"]["jobs"]["timings"]
    assert timings["cached"] == saved and timings["computed"] == timings["requests"] - saved
    reference = samples(tiny_in_process[0])
    for key, row in samples(tmp_path / "run").items():
        assert row["response"]["logprobs"] == pytest.approx(reference[key]["response"]["logprobs"], abs=1e-4)


def test_a_server_with_off_by_one_log_probabilities_is_refused_for_log_likelihood_only(server, datasets, tmp_path):
    server.shifted = True
    logs: list[str] = []
    results = through(server, tmp_path / "run", datasets, logs=logs, limit=1)
    for name in ("jobs", "itap-at-logprob"):
        task = results["tasks"][name]
        assert task["results"] is None and "off-by-one" in task["not_computed"] and "echoed log-probability" in task["not_computed"]
    assert results["tasks"]["itap-at"]["results"]["n"] == 1  # generation still runs
    report = (tmp_path / "run" / "report.md").read_text()
    assert "off-by-one" in report
    assert any("not computed" in line and "off-by-one" in line for line in logs)


def test_a_chat_only_api_without_top_k_still_generates(tiny_server, datasets, tmp_path):
    tiny_server.completions, tiny_server.reject_top_k = False, True
    logs: list[str] = []
    results = through(tiny_server, tmp_path / "run", datasets, tasks="itap-at,jobs", limit=1, logs=logs)
    assert results["tasks"]["itap-at"]["results"]["n"] == 1
    assert all("top_k" not in payload for path, payload in tiny_server.seen if path == "/v1/chat/completions")
    assert "server sampling: temperature 0, top_p 1, seed 1234, no top_k" in logs
    assert "HTTP 404" in results["tasks"]["jobs"]["not_computed"]  # no /completions: no log-likelihood


def test_without_a_tokenizer_log_likelihood_is_not_computed_and_says_how_to_fix_it(server, datasets, in_process, tmp_path):
    server.tokenize = False
    results = through(server, tmp_path / "run", datasets, tasks="jobs")
    assert "--tokenizer" in results["tasks"]["jobs"]["not_computed"]
    again = through(server, tmp_path / "again", datasets, tasks="jobs", tokenizer="smollm2")  # the model's own tokenizer, named
    reference = samples(in_process[0])
    for key, row in samples(tmp_path / "again").items():
        assert row["response"]["logprobs"] == pytest.approx(reference[key]["response"]["logprobs"], abs=1e-4)


def test_the_api_key_is_sent_and_never_written(tiny_server, datasets, tmp_path, monkeypatch, capsys):
    server = tiny_server
    server.key = KEY
    monkeypatch.setenv("EQUITA_TEST_KEY", KEY)
    logs: list[str] = []
    through(server, tmp_path / "run", datasets, tasks="jobs", api_key_env="EQUITA_TEST_KEY", logs=logs)
    assert set(server.authorizations) == {f"Bearer {KEY}"}
    monkeypatch.setenv("EQUITA_TEST_KEY", KEY + "-wrong")
    with pytest.raises(ModelError) as refused:
        through(server, tmp_path / "other", datasets, tasks="jobs", api_key_env="EQUITA_TEST_KEY", logs=logs)
    assert "401" in str(refused.value)
    written = "".join(p.read_text(errors="replace") for p in (tmp_path).rglob("*") if p.is_file())
    captured = capsys.readouterr()
    for text in (written, "\n".join(logs), str(refused.value), captured.out, captured.err):
        assert KEY not in text


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"server": "127.0.0.1:8000"}, "give the server's base URL"),
        ({"model": "another-model"}, "serves smollm2-test"),
        ({"api_key_env": "EQUITA_NO_SUCH_VARIABLE"}, "that environment variable is not set"),
        ({"tokenizer": "/no/such/tokenizer"}, "--tokenizer '/no/such/tokenizer' cannot be loaded"),
    ],
)  # fmt: skip
def test_bad_server_settings_are_one_line_errors(tiny_server, datasets, tmp_path, settings, message):
    with pytest.raises(ModelError, match=message):
        through(tiny_server, tmp_path / "run", datasets, tasks="jobs", **settings)
    assert not (tmp_path / "run").exists()
