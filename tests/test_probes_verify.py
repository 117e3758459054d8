"""The red-team probes of `equita verify` and `equita submit` (review of 2026-12-02: D2, D5, D10,
D14 in verify, D17, and what held), at the command line: each one gets its exit code and a one-line
message, no traceback, and leaves every file on disk as it was.

Two honest runs are edited, one probe each: a tiny Llama in this process on ItaP-AT and Jobs
(its prompts rendered with its chat template, recorded in results.json), and ItaP-AT through a
minimal OpenAI-compatible chat server without --tokenizer (its chat prompts are the messages it
sent, as JSON).
`verify` runs in this process; `submit` runs in one worker process pointed at the loopback Hub
(huggingface_hub reads its endpoint once, at import), where Jobs and ItaP-AT are published."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import hub_server
from equita.builders import itap_at, jobs
from test_probes import invoke, tree

LIMIT = 1  # one ItaP-AT row, one Jobs profession (and the neutral sentences): each probe needs one sample
ORG = "equita-test"
HINT = "\nSuggerimento: rispondi con la parola dello stereotipo."
PRIVATE = "/scratch/user/models/bert-private"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, itap_dir):
    folder = tmp_path_factory.mktemp("datasets")
    shutil.copytree(itap_dir, folder / "itap_at")
    jobs.build(folder / "jobs")
    return folder


SERVED = "fake-model"


@contextlib.contextmanager
def chat_server():
    """A minimal OpenAI-compatible server on 127.0.0.1 that lists SERVED and answers every chat
    request with the same sentence (what a server run records does not depend on the answers);
    yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, body: dict, status: int = 200):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.answer({"object": "list", "data": [{"id": SERVED, "object": "model", "owned_by": "equita-tests"}]})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.endswith("/chat/completions"):
                return self.answer({"error": {"message": f"{self.path}: not served here"}}, 404)
            message = {"role": "assistant", "content": "La risposta è: piacevole."}
            self.answer({"object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, datasets, tiny_model_dir, hub) -> dict:
    """Results folders of two honest runs: "in-process" (ItaP-AT and Jobs) and "server" (ItaP-AT, no --tokenizer).
    (`hub` first: its worker gets ready meanwhile.)"""
    from equita.runners.run import RunOptions, run

    root = tmp_path_factory.mktemp("runs")
    run(RunOptions(model=str(tiny_model_dir), out=root / "in-process", tasks="itap-at,jobs", datasets=str(datasets), limit=LIMIT, batch_size=8),
        log=lambda m: None)  # fmt: skip
    with chat_server() as url:
        run(RunOptions(model=SERVED, out=root / "server", tasks="itap-at", datasets=str(datasets), limit=LIMIT, server=url, concurrency=2),
            log=lambda m: None)  # fmt: skip
    return {"in-process": root / "in-process", "server": root / "server"}


# -- edits of a results folder: each takes (results, samples, datasets) and changes them in place ---


def read(folder):
    return json.loads((folder / "results.json").read_text()), [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]


def write(folder, results, samples):
    (folder / "results.json").write_text(json.dumps(results))
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))


def rekey(results, samples, task="itap-at"):
    """prompts_sha256 made to match the samples' keys again, as a careful forger would."""
    keys = "".join(s["prompt_sha256"] for s in samples if s["task"] == task)
    results["tasks"][task]["prompts_sha256"] = hashlib.sha256(keys.encode()).hexdigest()


def hinted(results, samples, datasets):
    """D5: a hint after each ItaP-AT user text, every key recomputed (as in the report)."""
    from equita.runners import data
    from equita.runners.cache import request_key
    from equita.runners.tasks import EVAL_TASKS

    task = EVAL_TASKS["itap-at"]
    rows = {r["id"]: r for r in data.load_rows(task.config, task.split, *data.locate(task.dataset, str(datasets), None, log=lambda m: None))}
    for sample in samples:
        if sample["task"] == "itap-at":
            request = task.request(rows[sample["id"]])
            if sample["prompt"].startswith('{"messages"'):  # a server run's prompt: the messages, as JSON
                sent = json.loads(sample["prompt"])
                sent["messages"][-1]["content"] += HINT
                sample["prompt"] = json.dumps(sent, ensure_ascii=False)
            else:
                sample["prompt"] = sample["prompt"].replace(request.user, request.user + HINT)
            sample["prompt_sha256"] = request_key(request, sample["prompt"])
    rekey(results, samples)


def headline(results, samples, datasets):
    results["tasks"]["jobs"]["results"]["bias_score"] = 0.875


def tampered_key(results, samples, datasets):
    next(s for s in samples if s["task"] == "jobs")["prompt_sha256"] = "0" * 64


def unknown_row(results, samples, datasets):
    next(s for s in samples if s["task"] == "jobs")["id"] = "nope"


def stray_task(results, samples, datasets):
    samples.append({**next(s for s in samples if s["task"] == "itap-at"), "task": "itap-at-oneshot"})


def older_folder(results, samples, datasets):
    del results["settings"]["chat_format"]  # written before the chat template was recorded


def model_option(results, samples, datasets):
    results["tasks"]["jobs"]["metric"]["options"]["model"] = "/somewhere/else"


def value(path, new):
    """An edit setting results[path...] to `new`."""

    def edit(results, samples, datasets):
        where = results
        for key in path[:-1]:
            where = where[key]
        where[path[-1]] = new

    return edit


def raw_results(content: bytes):
    """An edit that writes results.json as these bytes (after the folder is written)."""

    def edit(results, samples, datasets):
        return content

    return edit


def model_id(name):
    return value(["model", "id"], name)


def local_paths(results, samples, datasets):
    """D10: paths of the run's machine inside longer texts (a message, an option, a description) and in a sample's own field."""
    itap = results["tasks"]["itap-at"]
    itap.update(results=None, not_computed=f"gfg_detection's model could not be loaded: could not load '{PRIVATE}'. Use `repo_type` argument if needed")
    results["tasks"]["jobs"]["metric"]["options"]["model_type"] = f"{PRIVATE}/encoder"
    results["tasks"]["jobs"]["description"] = "Jobs, scored with the data in /data/private/jobs (C:\\Users\\me\\jobs on the laptop)"
    next(s for s in samples if s["task"] == "jobs")["note"] = "read from /data/private/jobs.parquet"


# -- verify ------------------------------------------------------------------------------------------

# (case, run, edit, exit code, message): every probe of the report that reaches `equita verify`.
VERIFY = [
    ("honest in-process run", "in-process", None, 0, "verified"),
    ("D2: honest server run without --tokenizer", "server", None, 0, "verified"),
    ("D5: a hint added, keys recomputed", "in-process", hinted, 1, "itap-at: mismatch: sample "),
    ("D5: a hint added to a server run's messages", "server", hinted, 1, "its prompt's messages are not the ones its task makes of the dataset row"),
    ("results without the chat template", "in-process", older_folder, 1, "itap-at: not verifiable: prompts: the run recorded no chat format"),
    ("a headline that disagrees with the samples", "in-process", headline, 1, "jobs: mismatch: results.bias_score: 0.875 recorded"),
    ("a tampered key", "in-process", tampered_key, 1, "prompt_sha256 is not the key of its request and prompt"),
    ("an unknown row", "in-process", unknown_row, 1, 'sample ids not in jobs/sentences: "nope"'),
    ("samples of a task not in the results", "in-process", stray_task, 1, "the samples hold task 'itap-at-oneshot'"),
    ("a metric option naming a model", "in-process", model_option, 1, "metric options model chose the metric's model for the run"),
    ("NaN in a numeric key", "in-process", value(["tasks", "jobs", "results", "bias_score"], float("nan")), 2, "does not follow the results schema: tasks.jobs.results.bias_score"),
    ("a string in a numeric key", "in-process", value(["tasks", "jobs", "results", "bias_score"], "0.5"), 2, "does not follow the results schema: tasks.jobs.results.bias_score"),
    ("D14: a 400-digit integer in a numeric key", "in-process", value(["tasks", "jobs", "results", "bias_score"], -(10**400)), 2,
     "does not follow the results schema: tasks.jobs.results.bias_score"),
    ("results nested 50,000 deep", "in-process", raw_results(b"[" * 50_000 + b"]" * 50_000), 2, "nested too deeply"),
    ("results not UTF-8", "in-process", raw_results(b'{"schema": "caff\xe8"}'), 2, "not UTF-8"),
]  # fmt: skip


def prepare(runs, datasets, tmp_path, source, edit):
    folder = tmp_path / "results"
    shutil.copytree(runs[source], folder)
    if edit is not None:
        results, samples = read(folder)
        content = edit(results, samples, datasets)
        write(folder, results, samples)
        if isinstance(content, bytes):
            (folder / "results.json").write_bytes(content)
    return folder


@pytest.mark.parametrize("case, source, edit, code, message", VERIFY, ids=[row[0] for row in VERIFY])
def test_verify_probes(runs, datasets, tmp_path, monkeypatch, case, source, edit, code, message):
    folder = prepare(runs, datasets, tmp_path, source, edit)
    before, data_before = tree(tmp_path), tree(datasets)
    exit_code, output = invoke(["verify", str(folder), "--datasets", str(datasets)], tmp_path, monkeypatch)
    said = " ".join(output.split())
    assert exit_code == code and message in said, output
    assert tree(tmp_path) == before and tree(datasets) == data_before


# -- submit ------------------------------------------------------------------------------------------

WORKER = """
import json, sys
from typer.testing import CliRunner
from equita.runners.cli import app
# What every submit needs, loaded while the test process makes its runs.
import transformers.utils.chat_template_utils
from equita.runners.run import load_metric
load_metric("itap_at_bias"), load_metric("jobs_bias")

for line in sys.stdin:
    result = CliRunner().invoke(app, json.loads(line))
    crash = None if result.exception is None or isinstance(result.exception, SystemExit) else f"{type(result.exception).__name__}: {result.exception}"
    print(json.dumps({"code": result.exit_code, "output": result.output, "crash": crash}), flush=True)
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory, datasets):
    """The loopback Hub with Jobs and ItaP-AT published, and `equita(*args) -> (code, output)` run
    by one worker process that points at it. Set up before the runs (see `runs`): the worker
    starts and publishes while they run."""
    with hub_server.running(tmp_path_factory.mktemp("hf-home"), "hf_test_token_probes") as (state, env):
        worker = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

        def send(*args):
            worker.stdin.write(json.dumps([str(a) for a in args]) + "\n")
            worker.stdin.flush()

        def receive() -> dict:
            answer = json.loads(worker.stdout.readline())
            assert answer["crash"] is None, f"traceback instead of a message: {answer['crash']}"
            return answer

        for name, version in (("jobs", jobs.VERSION), ("itap_at", itap_at.VERSION)):
            send("publish", datasets / name, "--repo-id", f"{ORG}/{name}", "--version", version)
        unread = [2]  # the publishing answers, read at the first command

        def equita(*args):
            for _ in range(unread.pop() if unread else 0):
                published = receive()
                assert published["code"] == 0, published["output"]
            send(*args)
            answer = receive()
            return answer["code"], answer["output"]

        try:
            yield state, equita
        finally:
            worker.kill()  # it holds nothing to save; its exit would take seconds
            worker.wait()


def submitted_text(repo) -> str:
    """Every file the pull requests of a results repository add, as one text."""
    return "".join(content.decode() for pull in repo.pulls for path, content in repo.files(pull["head"]).items() if path != ".gitattributes")


# (case, run, edit, times submitted, exit code, message, what no submitted file may hold)
SUBMIT = [
    ("honest in-process run", "in-process", None, 1, 0, "opened", ()),
    ("D2: honest server run without --tokenizer", "server", None, 1, 0, "opened", ()),
    ("the same results again", "in-process", None, 2, 0, "already submitted as pull request #1", ()),
    ("D5: a hint added, keys recomputed", "in-process", hinted, 1, 1, "task itap-at does not verify: sample ", ()),
    ("D5: a hint added to a server run's messages", "server", hinted, 1, 1, "task itap-at does not verify: sample ", ()),
    ("D17: model id ..", "in-process", model_id(".."), 1, 1, "results.json: model id '..' cannot name a file", ()),
    # (the results schema refuses it first now, as too long for a leaderboard page; submit's own check is the next line of defence)
    ("D17: a long non-ASCII model id", "in-process", model_id("modello-" + 40 * "è"), 1, 1, "characters once", ()),
    ("D10: local paths in messages, options, descriptions and a sample field", "in-process", local_paths, 1, 0, "opened",
     ("/scratch/", "/data/", "C:\\\\Users", "bert-private")),
    ("a dataset id that is a path", "in-process", value(["tasks", "jobs", "dataset", "id"], "../../.eval_results"), 1, 1,
     "tasks.jobs.dataset.id '../../.eval_results' is not an equita dataset", ()),
    ("a dataset version that is a path", "in-process", value(["tasks", "jobs", "dataset", "version"], "3.0.0/../../x"), 1, 1,
     "tasks.jobs.dataset.version '3.0.0/../../x' is not a version X.Y.Z", ()),
    ("an all-zero Hub revision", "in-process", lambda r, s, d: r["tasks"]["jobs"]["dataset"].update(location="hub", revision="0" * 40), 1, 1,
     f"revision '{'0' * 40}' is not the commit of {ORG}/jobs@v{jobs.VERSION}", ()),
    ("a headline that disagrees with the samples", "in-process", headline, 1, 1, "task jobs does not verify: results.bias_score: 0.875 recorded", ()),
    ("a tampered key", "in-process", tampered_key, 1, 1, "prompt_sha256 is not the key of its request and prompt", ()),
    ("an unknown row", "in-process", unknown_row, 1, 1, 'sample ids not in jobs/sentences: "nope"', ()),
    ("samples of a task not in the results", "in-process", stray_task, 1, 1, "task itap-at-oneshot does not verify", ()),
]  # fmt: skip


@pytest.mark.parametrize("case, source, edit, times, code, message, absent", SUBMIT, ids=[row[0] for row in SUBMIT])
def test_submit_probes(hub, runs, datasets, tmp_path, case, source, edit, times, code, message, absent):
    state, equita = hub
    results_repo = f"{ORG}/results-{hashlib.sha256(case.encode()).hexdigest()[:8]}"  # each probe its own results dataset
    state.create_repo("dataset", results_repo)
    folder = prepare(runs, datasets, tmp_path, source, edit)
    before = tree(tmp_path)
    for _ in range(times):
        exit_code, output = equita("submit", folder, "--results-repo", results_repo, "--datasets-org", ORG)
    said = " ".join(output.split())
    assert exit_code == code and message in said, output
    if code != 0:  # a refusal is one line, and opens nothing
        assert len([line for line in output.strip().splitlines() if line.startswith("submit failed")]) == 1, output
        assert state.repos[("dataset", results_repo)].pulls == []
    else:
        datasets_submitted = {task["dataset"]["id"] for task in read(folder)[0]["tasks"].values()}
        assert len(state.repos[("dataset", results_repo)].pulls) == len(datasets_submitted)  # one per dataset, each once
        text = submitted_text(state.repos[("dataset", results_repo)])
        assert [a for a in absent if a in text] == [], text[:2000]
    assert tree(tmp_path) == before
