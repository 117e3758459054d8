"""The red-team probes of the `--server` backend (report 2026-12-02: D4, D7, D8, D9, D11, D12, D13,
D18, D22, D27, D28, D31), at the command line against a hostile loopback server
(openai_server.py's `state.mode`, answering with the tiny random Llama): each probe ends with its
exit code and a one-line message, no traceback, nothing changed outside the run's --out, and
neither the server's address nor a secret in any file the run wrote."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from pathlib import Path

import pytest

import openai_server
from test_probes import invoke, tree

KEY = "sk-probe-SECRET-0123456789"
PASSWORD = "pw-SECRET-42"


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from equita.runners.backends.models import load_model

    return load_model(str(tiny_model_dir))


@contextlib.contextmanager
def hostile(model, mode: str | None):
    state = openai_server.State(model=model, mode=mode)
    httpd = openai_server.serve(state)
    state.port = httpd.server_port
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt in the main thread, as in `equita run`, even under a test runner that ignores it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def written(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(out.rglob("*")) if p.is_file())


def cached(out: Path) -> list[dict]:
    path = out / "requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def task_result(out: Path, name: str) -> dict:
    return json.loads((out / "results.json").read_text())["tasks"][name]


def nothing_cached(out, output):
    assert cached(out) == [] and (not (out / "requests.jsonl").exists() or (out / "requests.jsonl").stat().st_size < 1000)


def answers_within_budget(out, output):
    texts = [entry["response"]["text"] for entry in cached(out)]
    assert texts and all(len(text) <= 32 * 128 for text in texts)


def empty_answer_cached(out, output):
    assert [entry["response"]["text"] for entry in cached(out)] == [""]


def workers_gone(out, output):
    # Ctrl-C ended the run without waiting for the request in flight; its thread is a daemon
    # (the interpreter does not join it at exit) and stops at its next read.
    for _ in range(40):
        workers = [t for t in threading.enumerate() if t.name.startswith("equita-server")]
        if not workers:
            break
        assert all(t.daemon for t in workers)
        time.sleep(0.05)
    assert not workers


def jobs_computed(out, output):
    assert task_result(out, "jobs")["results"] is not None, task_result(out, "jobs")["not_computed"]


def jobs_computed_at_zero(out, output):
    jobs_computed(out, output)  # jobs_bias refused the positive sums cached before
    values = [value for entry in cached(out) for value in entry["response"]["logprobs"]]
    assert values and all(value == 0.0 for value in values)


def jobs_not_computed(out, output):
    assert task_result(out, "jobs")["results"] is None


def key_hidden(out, output):
    assert cached(out) and all("***" in entry["response"]["text"] for entry in cached(out))
    assert KEY not in written(out) and KEY not in output
    assert output.count("recorded as ***") == 1


def key_hidden_in_refusal(out, output):
    assert KEY not in output and KEY not in written(out)


def password_hidden(out, output):
    assert PASSWORD not in written(out) and PASSWORD not in output


def no_retries_claimed(out, output):
    assert "retries" not in output


SERVER = "http://127.0.0.1:{port}/v1"  # --server, formatted with the hostile server's port

# (case, server mode, --server, --tasks, extra args, exit code, message, at most seconds, check on --out and the output)
PROBES = [
    ("D4 a 2 MB answer: max_tokens ignored", "huge", SERVER, "itap-at", [], 1, "the server ignored max_tokens (32)", None, nothing_cached),
    ("D4 an answer longer than 32 tokens can be", "long", SERVER, "itap-at", [], 0, "it is cut to 4096 characters", None, answers_within_budget),
    ("D7 a body trickled a byte every 0.1 s", "trickle", SERVER, "itap-at", ["--request-timeout", "1", "--max-retries", "0"], 1,
     "<server>/v1/chat/completions: no answer after 0 retries (no whole answer within 1 s)", 12, nothing_cached),
    ("D7 Retry-After: 3600", "retry_after", SERVER, "itap-at", ["--request-timeout", "1", "--max-retries", "2"], 1,
     "<server>/v1/chat/completions: HTTP 429: slow down", 12, nothing_cached),
    ("D7 Ctrl-C with a request in flight", "interrupt", SERVER, "itap-at", ["--request-timeout", "30"], 130, "interrupted: answers so far are saved", 12, workers_gone),
    ("D8 a 503 on the log-probability check is retried", "probe503", SERVER, "jobs", [], 0, "jobs", None, jobs_computed),
    ("D9 dropped echo connections: the reason names no host or port", "drop", SERVER, "jobs", ["--max-retries", "1"], 0,
     "not computed: the log-probability check failed: <server>/v1/completions: no answer after 1 retries (ConnectionError", None, jobs_not_computed),
    ("D11 log-probabilities at +5e-7 read as 0", "tinypos", SERVER, "jobs", [], 0, "jobs", None, jobs_computed_at_zero),
    ("D12 a chat choice without a message", "missing", SERVER, "itap-at", [], 1, "the answer's choice has no message object (null)", None, nothing_cached),
    ("D12 content: null is an empty answer", "null_content", SERVER, "itap-at", [], 0, "itap-at", None, empty_answer_cached),
    ("D13 token_logprobs of objects", "lp_dict", SERVER, "jobs", [], 0, "choices[0].logprobs.token_logprobs[1] is an object, not a number", None, jobs_not_computed),
    ("D13 token_logprobs of strings", "lp_str", SERVER, "jobs", [], 0, "choices[0].logprobs.token_logprobs[1] is a string, not a number", None, jobs_not_computed),
    ("D13 top_logprobs of lists", "tops_list", SERVER, "jobs", [], 0, "choices[0].logprobs.top_logprobs[1]['a'] is a list, not a number", None, jobs_not_computed),
    # What held in the report, kept as it is.
    ("a 200 that is not JSON", "not_json", SERVER, "itap-at", [], 1, "<server>/v1/chat/completions: HTTP 200: <html>502 Bad Gateway</html>", None, nothing_cached),
    ("no choices", "no_choices", SERVER, "itap-at", [], 1, "<server>/v1/chat/completions: the answer has no choices", None, nothing_cached),
    ("content as a list", "list_content", SERVER, "itap-at", [], 1, "the answer's text is a list, not a string", None, nothing_cached),
    ("NaN echoed", "lp_nan", SERVER, "jobs", [], 0, "echoed log-probabilities are not all numbers <= 0", None, jobs_not_computed),
    ("a 400-digit integer echoed", "lp_huge", SERVER, "jobs", [], 0, "token_logprobs[1] is a number too large for a log-probability", None, jobs_not_computed),
    ("a 401 quoting the key", "refuse_key", SERVER, "jobs", [], 1, "<server>/v1/models: HTTP 401: invalid key in Bearer ***", None, key_hidden_in_refusal),
    ("D18 --request-timeout inf", None, SERVER, "jobs", ["--request-timeout", "inf"], 2, "--request-timeout inf: at most 3600 seconds", None, None),
    ("D18 --request-timeout 1e12", None, SERVER, "jobs", ["--request-timeout", "1e12"], 2, "--request-timeout 1e+12: at most 3600 seconds", None, None),
    ("D22 an answer echoing the API key", "echo_key", SERVER, "itap-at", [], 0, "an answer held the API key or the URL's password", None, key_hidden),
    ("D27 a 307 to another port", "redirect", SERVER, "itap-at", [], 1, "<server>/v1/models: HTTP 307: the server redirects to another address", None, nothing_cached),
    # (A broken answer ends the run early, after the first line has shown the URL.)
    ("D28 a URL with user:password", "missing", f"http://user:{PASSWORD}@127.0.0.1:{{port}}/v1", "itap-at", [], 1, "server http://user:***@", None, password_hidden),
    ("D31 http://", None, "http://", "itap-at", [], 1, "--server 'http://': not a valid URL", None, no_retries_claimed),
    ("D31 http://[::1/v1", None, "http://[::1/v1", "itap-at", [], 1, "--server 'http://[::1/v1': not a valid URL", None, no_retries_claimed),
]  # fmt: skip


@pytest.mark.parametrize("case, mode, server, tasks, extra, code, message, seconds, check", PROBES, ids=[p[0] for p in PROBES])
def test_a_hostile_server_gets_one_line_and_changes_nothing_outside_out(tiny, datasets, tmp_path, monkeypatch, case, mode, server, tasks, extra, code, message, seconds,
                                                                        check):  # fmt: skip
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if mode in ("echo_key", "refuse_key"):
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
    (tmp_path / "notes.txt").write_text("a user's file beside --out")
    before = tree(tmp_path)
    with hostile(tiny, mode) as state, ctrl_c_raises():
        args = ["run", "--server", server.format(port=state.port), "--model", state.name, "--out", "out", "--tasks", tasks, "--datasets", str(datasets), "--limit", "1", *extra]
        started = time.monotonic()
        got, output = invoke(args, tmp_path, monkeypatch)
        elapsed = time.monotonic() - started
        assert got == code, output
        assert any(message in line for line in output.splitlines()), output
        assert "Traceback" not in output
        if seconds is not None:
            assert elapsed < seconds, f"{elapsed:.1f} s"
        assert {k: v for k, v in tree(tmp_path).items() if not k.startswith("out")} == before
        out = tmp_path / "out"
        assert "127.0.0.1" not in written(out) and f":{state.port}" not in written(out)  # the server's address is not recorded
        if check is not None:
            check(out, output)
