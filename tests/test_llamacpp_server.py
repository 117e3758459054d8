"""`equita run --server` against a real server: llama-cpp-python's OpenAI-compatible server on
loopback, serving the embedded SmolLM2 GGUF. Generation runs through its chat completions; the
log-likelihood tasks are refused by the check with a message that says why, and the run goes on.

CI installs llama-cpp-python (built from its source distribution); elsewhere the test needs it too.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
import requests

from equita.builders import jobs
from equita.runners.run import RunOptions, run
from equita.runners.backends.sources import embedded_gguf

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp.server", reason="pip install 'llama-cpp-python[server]' (CI always does)")

NAME = "smollm2-llamacpp"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"  # a file, not a pipe: a full pipe would block the server
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf("smollm2")), "--host", "127.0.0.1",
               "--port", str(port), "--model_alias", NAME, "--n_ctx", "2048", "--logits_all", "true"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):  # bounded: at most 120 s to come up
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                if requests.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"llama_cpp.server did not answer within 120 s: {log.read_text()[-2000:]}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_generation_runs_and_log_likelihood_is_refused_with_its_reason(llama_server, itap_dir, tmp_path):
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    jobs.build(datasets / "jobs")
    (datasets / "itap_at").symlink_to(itap_dir)
    logs: list[str] = []
    options = RunOptions(model=NAME, out=tmp_path / "run", tasks="itap-at,jobs,itap-at-logprob", datasets=str(datasets), limit=3,
                         server=llama_server, tokenizer="smollm2", concurrency=2, request_timeout=60)  # fmt: skip
    results = run(options, log=logs.append)
    generated = results["tasks"]["itap-at"]
    assert generated["results"]["n"] == 3 and generated["timings"]["computed"] == 3
    answers = [json.loads(line)["response"]["text"] for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
               if json.loads(line)["task"] == "itap-at"]  # fmt: skip
    assert len(answers) == 3 and all(isinstance(a, str) and a.strip() for a in answers)
    for name in ("jobs", "itap-at-logprob"):
        reason = results["tasks"][name]["not_computed"]
        assert results["tasks"][name]["results"] is None
        assert "refuses a prompt given as token ids" in reason and "boundary between context and continuation" in reason
        assert "127.0.0.1" not in reason  # the server's address is not recorded
    assert "server sampling: temperature 0, top_p 1, seed 1234, top_k 0" in logs  # llama.cpp refuses top_k -1
    assert "**Not computed:** the server refuses a prompt given as token ids" in (tmp_path / "run" / "report.md").read_text()


def test_smollm2_as_a_judge_of_its_own_answers_agrees_poorly_and_says_so(llama_server, itap_dir, tmp_path):
    # Issue 28: the real server as the LLM judge (`equita rescore --judge-server`). A 135M model is
    # no annotator: what matters is that its replies are read as labels or as unreadable, never
    # guessed, and that the low agreement is flagged.
    from equita.runners.judge import UNREADABLE, JudgeOptions
    from equita.runners.results.rescore import rescore

    datasets = tmp_path / "datasets"
    datasets.mkdir()
    (datasets / "itap_at").symlink_to(itap_dir)
    run(RunOptions(model=NAME, out=tmp_path / "run", tasks="itap-at", datasets=str(datasets), limit=4, server=llama_server, concurrency=2, request_timeout=60),
        log=lambda message: None)  # fmt: skip
    logs: list[str] = []
    rescored, _ = rescore(tmp_path / "run", tmp_path / "judged", datasets=str(datasets), judge=JudgeOptions(llama_server, NAME, concurrency=2, timeout=60), log=logs.append)
    judged = rescored["tasks"]["itap-at"]["judge"]
    agreed = judged["agreement"]
    replies = [json.loads(line)["judge_reply"] for line in (tmp_path / "judged" / "samples.jsonl").read_text().splitlines()]
    print("SmolLM2 as judge:", json.dumps({"kappa": agreed["kappa"], "n": agreed["n"], "unreadable": agreed["unreadable"], "replies": replies[:4]}, ensure_ascii=False))
    assert agreed["n"] + agreed["unreadable"] == 4
    assert judged["warnings"] == ["low_agreement"] and any("neither reading stands alone" in line for line in logs)
    samples = [json.loads(line) for line in (tmp_path / "judged" / "samples.jsonl").read_text().splitlines()]
    for sample in samples:
        assert sample["judge_label"] in ("stereotype", "anti_stereotype", "neutral", "error", UNREADABLE)
        assert sample["judge_label"] != UNREADABLE or sample["judge_reply"].strip().upper() not in ("A", "B", "ENTRAMBE", "NESSUNA")
