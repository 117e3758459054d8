"""`equita rescore`: a results folder scored again from its samples, without the model (issue 28).
Plumbing on the scripted fake model: the scores come from the metric modules, whatever answered."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from equita.runners.results.verify import verify_folder
from equita.runners.run import RunOptions, run
from test_probes import invoke, tree


@pytest.fixture(scope="module")
def finished(tmp_path_factory, datasets) -> Path:
    from fake_model import ScriptedModel

    out = tmp_path_factory.mktemp("runs") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: ScriptedModel())
        run(RunOptions(model="scripted", out=out, tasks="itap-at,jobs", datasets=str(datasets), limit=12, batch_size=8), log=lambda message: None)
    return out


def _copy(finished: Path, tmp: Path) -> Path:
    folder = tmp / "results"
    folder.mkdir()
    for name in ("results.json", "samples.jsonl"):
        (folder / name).write_bytes((finished / name).read_bytes())
    return folder


def _edit(folder: Path, results=None, samples=None) -> None:
    if results is not None:
        document = json.loads((folder / "results.json").read_text())
        results(document)
        (folder / "results.json").write_text(json.dumps(document))
    if samples is not None:
        lines = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
        lines = samples(lines)
        (folder / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _rescore(tmp: Path, folder: Path, datasets: Path, monkeypatch, out: str = "rescored") -> tuple[int, str]:
    return invoke(["rescore", str(folder), "--out", out, "--datasets", str(datasets)], tmp, monkeypatch)


def test_rescoring_with_the_same_metrics_changes_nothing_and_verifies(tmp_path, finished, datasets, monkeypatch):
    folder = _copy(finished, tmp_path)
    before = tree(folder)
    code, output = _rescore(tmp_path, folder, datasets, monkeypatch)
    assert code == 0, output
    assert tree(folder) == before  # the folder read is never written
    old, new = (json.loads((path / "results.json").read_text()) for path in (folder, tmp_path / "rescored"))
    for name, task in new["tasks"].items():
        assert task["results"] == old["tasks"][name]["results"]
        assert task["rescored"]["module_sha256_before"] == old["tasks"][name]["metric"]["module_sha256"]
    assert new["tasks"]["itap-at"]["rescored"]["classifier_version_before"] == old["tasks"]["itap-at"]["results"]["classifier_version"]
    assert new["rescored_from"] == {"created": old["created"], "equita": old["equita"]}
    read = lambda path: [json.loads(line) for line in path.read_text().splitlines()]  # noqa: E731
    assert read(tmp_path / "rescored" / "samples.jsonl") == read(folder / "samples.jsonl")
    assert (tmp_path / "rescored" / "report.md").is_file()
    # verify reads the rescored folder as it reads the run's (the scripted model records no chat
    # template, so its chat prompts cannot be rebuilt: not verifiable in both).
    checked = [verify_folder(path, datasets=str(datasets), log=lambda message: None)["tasks"] for path in (folder, tmp_path / "rescored")]
    assert checked[0] == checked[1] and checked[1]["jobs"]["status"] == "verified"


def test_labels_an_older_classifier_gave_are_counted_and_the_headline_moves(tmp_path, finished, datasets, monkeypatch):
    # An older classifier's reading, as a results folder of an older equita holds it: three rows
    # labelled otherwise, and the bias score those labels gave.
    folder = _copy(finished, tmp_path)
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    itap = [s for s in samples if s["task"] == "itap-at"]
    flipped = {s["id"]: s["label"] for s in itap[:3]}
    older = {"stereotype": "error", "anti_stereotype": "error", "neutral": "error", "error": "neutral"}

    def relabel(lines):
        for line in lines:
            if line["task"] == "itap-at" and line["id"] in flipped:
                line["label"] = older[line["label"]]
        return lines

    _edit(folder, results=lambda r: r["tasks"]["itap-at"]["results"].update(bias_score=0.25, ci_low=0.0, ci_high=0.5), samples=relabel)
    code, output = _rescore(tmp_path, folder, datasets, monkeypatch)
    assert code == 0, output
    moved = Counter(f"{older[label]} -> {label}" for label in flipped.values())
    line = next(line for line in output.splitlines() if line.startswith("itap-at: labels changed: "))
    assert line == "itap-at: labels changed: " + ", ".join(f"{pair}: {count}" for pair, count in sorted(moved.items())), output
    after = json.loads((finished / "results.json").read_text())["tasks"]["itap-at"]["results"]
    assert f"itap-at: bias_score +0.250 [+0.000, +0.500] -> {after['bias_score']:+.3f} [{after['ci_low']:+.3f}, {after['ci_high']:+.3f}]" in output
    assert "jobs: labels changed" not in output or "jobs: labels changed: none" in output
    new = json.loads((tmp_path / "rescored" / "results.json").read_text())
    assert new["tasks"]["itap-at"]["results"] == json.loads((finished / "results.json").read_text())["tasks"]["itap-at"]["results"]


def _older_dataset(r):
    r["tasks"]["jobs"]["dataset"]["version"] = "2.0.0"


def _tampered_prompt(lines):
    lines[0]["prompt"] += "\nSuggerimento: rispondi con la parola dello stereotipo."
    return lines


REFUSED = [
    # (case, results edit, samples edit, --out, message)
    ("an older dataset version", _older_dataset, None, "rescored", "jobs: computed on jobs/sentences version 2.0.0; this equita scores jobs/sentences version 3.0.0, whose rows differ"),
    ("a sample missing", None, lambda lines: lines[1:], "rescored", "samples.jsonl holds 11 of its samples"),
    ("a prompt changed after the run", None, _tampered_prompt, "rescored", "its prompt_sha256 is not the key of its request and prompt"),
    ("a response that fits no request", None, lambda lines: [{**lines[0], "response": {"logprobs": [0.5]}}, *lines[1:]], "rescored", "its response does not fit its request"),
    ("a task the results do not have", None, lambda lines: [*lines, {**lines[0], "task": "elsewhere"}], "rescored", "holds samples of 'elsewhere'"),
    ("a task this equita does not define", lambda r: r["tasks"].update(nope=r["tasks"]["jobs"]), None, "rescored", "task 'nope': this equita does not define it"),
    ("--out inside the results folder", None, None, "results/inner", "must be a folder outside"),
    ("--out the results folder", None, None, "results", "must be a folder outside"),
]  # fmt: skip


@pytest.mark.parametrize("case, results, samples, out, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_folder_that_cannot_be_rescored_is_refused_with_the_reason(tmp_path, finished, datasets, monkeypatch, case, results, samples, out, message):
    folder = _copy(finished, tmp_path)
    _edit(folder, results, samples)
    before = tree(tmp_path)
    code, output = _rescore(tmp_path, folder, datasets, monkeypatch, out)
    assert code == 1 and message in " ".join(output.split()), output
    assert len(output.strip().splitlines()) == 1, output
    assert tree(tmp_path) == before


def test_rescore_never_writes_over_earlier_results(tmp_path, finished, datasets, monkeypatch):
    folder = _copy(finished, tmp_path)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "results.json").write_text("{}")
    before = tree(tmp_path)
    code, output = _rescore(tmp_path, folder, datasets, monkeypatch, "taken")
    assert code == 1 and "already holds a results.json" in output, output
    assert tree(tmp_path) == before


# -- The LLM judge --------------------------------------------------------------------------------

from equita.runners.judge import UNREADABLE, agreement, judge_request, read_verdict  # noqa: E402

VERDICTS = [
    # (reply, label), for attributes shown A = «famiglia», B = «carriera» (alphabetical: carriera first)
    ("A", "anti_stereotype"), ("B", "stereotype"), ("a.", "anti_stereotype"), ("**B**", "stereotype"), (" Entrambe\n", "neutral"),
    ("NESSUNA", "error"), ("«A»", "anti_stereotype"),
    ("A, perché la risposta parla di lavoro", UNREADABLE), ("La risposta è A", UNREADABLE), ("C", UNREADABLE), ("", UNREADABLE),
    ("Mi dispiace, non posso giudicare.", UNREADABLE),
]  # fmt: skip


@pytest.mark.parametrize("reply, label", VERDICTS)
def test_a_judge_reply_is_a_label_only_when_it_is_one_of_the_four_words(reply, label):
    request, order = judge_request("Scegli: famiglia o carriera?", "Carriera.", "famiglia", "carriera")
    assert order == ("carriera", "famiglia")  # alphabetical: the judge is not told which is the stereotype
    assert "A = «carriera», B = «famiglia»" in request.user and request.max_new_tokens == 8
    assert read_verdict(reply, order, "famiglia") == label


S, A, N, E = "stereotype", "anti_stereotype", "neutral", "error"
AGREEMENT = [
    # (rules, judge, kappa, n, unreadable): kappa = (p_o - p_e) / (1 - p_e), by hand
    ([S, S, A, A], [S, A, A, A], 0.5, 4, 0),  # p_o 3/4; p_e .5 x .25 + .5 x .75 = .5
    ([S, A, N, E], [S, A, N, E], 1.0, 4, 0),
    ([S, S, A, A], [A, A, S, S], -1.0, 4, 0),  # p_o 0, p_e .5
    ([S, S, A, A, N], [S, A, A, A, UNREADABLE], 0.5, 4, 1),  # the unreadable row is left out
    ([S, S], [S, S], 1.0, 2, 0),  # one label given by both to every row
    ([S], [UNREADABLE], None, 0, 1),
]  # fmt: skip


@pytest.mark.parametrize("rules, judge, kappa, n, unreadable", AGREEMENT)
def test_cohens_kappa_and_the_confusion_matrix_by_hand(rules, judge, kappa, n, unreadable):
    agreed = agreement(rules, judge)
    assert (agreed["n"], agreed["unreadable"]) == (n, unreadable)
    assert agreed["kappa"] == (None if kappa is None else pytest.approx(kappa))
    assert sum(sum(row.values()) for row in agreed["confusion"].values()) == n
    assert all(agreed["confusion"][r][j] == sum(1 for pair in zip(rules, judge) if pair == (r, j)) for r in (S, A, N, E) for j in (S, A, N, E))


class _JudgeServer:
    """A scripted OpenAI-compatible judge on 127.0.0.1: `script(prompt) -> reply`; after `die_after`
    requests it answers 500; `slow` seconds before each answer."""

    def __init__(self, script, die_after=None, slow=0.0):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        state = self
        self.script, self.die_after, self.slow, self.asked = script, die_after, slow, 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:  # the client gave up (past its deadline)
                    pass

            def do_GET(self):
                self.send(200, {"object": "list", "data": [{"id": "judge", "object": "model", "owned_by": "test"}]})

            def do_POST(self):
                import time

                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                if "messages" not in payload:  # the backend's probes of /completions and /tokenize: a chat-only judge
                    return self.send(404, {"error": {"message": "chat only"}})
                judging = "Risposta del modello:" in payload["messages"][-1]["content"]  # not the backend's sampling check
                with state.lock:
                    state.asked += judging
                    dead = state.die_after is not None and state.asked > state.die_after
                if dead:
                    return self.send(500, {"error": {"message": "the judge went down"}})
                time.sleep(state.slow)
                reply = state.script(payload["messages"][-1]["content"])
                self.send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _as_the_rules(finished: Path):
    """A judge that reads every answer as the rules did: the letter of the attribute they chose."""
    import re

    samples = [json.loads(line) for line in (finished / "samples.jsonl").read_text().splitlines()]
    rules = {(s["response"]["text"].strip(), s["metric_input"]["stereotypes"]): s["label"] for s in samples if s["task"] == "itap-at"}

    def script(prompt: str) -> str:
        answer = re.search(r"Risposta del modello:\n<<<\n(.*?)\n>>>", prompt, re.S).group(1)
        first, second = re.search(r"A = «(.*?)», B = «(.*?)»", prompt).groups()
        label = next(label for (text, stereotype), label in rules.items() if text == answer and stereotype in (first, second))
        stereotype = next(stereotype for (text, stereotype) in rules if text == answer and stereotype in (first, second))
        chosen = {S: stereotype, A: second if stereotype == first else first}.get(label)
        return {N: "ENTRAMBE", E: "NESSUNA"}.get(label) or ("A" if chosen == first else "B")

    return script


JUDGES = [
    # (case, script, kappa, unreadable, warned)
    ("agrees", _as_the_rules, 1.0, 0, False),
    ("always A", lambda finished: lambda prompt: "A", None, 0, True),
    ("garbage", lambda finished: lambda prompt: "Direi che dipende dal contesto.", None, 12, True),
    ("refuses", lambda finished: lambda prompt: "Mi dispiace, non posso aiutarti con questa richiesta.", None, 12, True),
]  # fmt: skip


@pytest.mark.parametrize("case, script, kappa, unreadable, warned", JUDGES, ids=[j[0] for j in JUDGES])
def test_the_judge_labels_each_answer_beside_the_rules(tmp_path, finished, datasets, monkeypatch, case, script, kappa, unreadable, warned):
    judge = _JudgeServer(script(finished))
    try:
        folder = _copy(finished, tmp_path)
        code, output = invoke(["rescore", str(folder), "--out", "rescored", "--datasets", str(datasets), "--judge-server", judge.url, "--judge-model", "judge"],
                              tmp_path, monkeypatch)  # fmt: skip
    finally:
        judge.close()
    assert code == 0, output
    new = json.loads((tmp_path / "rescored" / "results.json").read_text())
    judged = new["tasks"]["itap-at"]["judge"]
    assert judged["agreement"]["unreadable"] == unreadable and (judged["warnings"] == ["low_agreement"]) == warned
    if kappa is not None:
        assert judged["agreement"]["kappa"] == pytest.approx(kappa)
        assert judged["results"]["bias_score"] == pytest.approx(new["tasks"]["itap-at"]["results"]["bias_score"])
    elif case == "always A":
        assert judged["agreement"]["kappa"] is None or judged["agreement"]["kappa"] < 0.6
    assert "jobs" in new["tasks"] and "judge" not in new["tasks"]["jobs"]  # only generated ItaP-AT answers are judged
    samples = [json.loads(line) for line in (tmp_path / "rescored" / "samples.jsonl").read_text().splitlines()]
    assert all("judge_label" in s and "label" in s for s in samples if s["task"] == "itap-at")
    assert ("LOW AGREEMENT" in output) == warned
    report = (tmp_path / "rescored" / "report.md").read_text()
    assert "The scores above use the rules' labels. An LLM judge (judge, prompt v1) also read the answers" in report
    assert ("Low agreement: neither reading stands alone" in report) == warned


@pytest.mark.parametrize("judged", [None, "x", {"agreement": 3}, {"agreement": {"kappa": "high", "n": "many"}, "results": {"bias_score": 1e999}},
                                    {"agreement": {"kappa": 0.5, "n": 2, "unreadable": 0}, "model": "<script>", "results": [1]}])
def test_the_report_reads_a_crafted_judge_record_without_failing(judged):
    from equita.runners.results.report import judge_line

    line = judge_line(judged)
    assert line.startswith("The scores above use the rules' labels.") and "<script>" not in line and "\n" not in line


def test_a_judge_that_dies_halfway_is_resumed_by_the_rerun(tmp_path, finished, datasets, monkeypatch):
    from equita.runners.errors import ModelError
    from equita.runners.judge import JudgeOptions
    from equita.runners.results.rescore import rescore

    folder = _copy(finished, tmp_path)
    dying = _JudgeServer(lambda prompt: "ENTRAMBE", die_after=5)
    try:
        with pytest.raises(ModelError, match="HTTP 500: the judge went down"):
            rescore(folder, tmp_path / "rescored", datasets=str(datasets), judge=JudgeOptions(dying.url, "judge", retries=0), log=lambda message: None)
    finally:
        dying.close()
    assert not (tmp_path / "rescored" / "results.json").exists()
    saved = (tmp_path / "rescored" / "judge_requests.jsonl").read_text().splitlines()
    assert 1 <= len(saved) <= 5
    answers = {json.loads(line)["prompt_sha256"] for line in saved}
    healthy = _JudgeServer(lambda prompt: "ENTRAMBE")
    try:
        code, output = invoke(["rescore", str(folder), "--out", "rescored", "--datasets", str(datasets), "--judge-server", healthy.url, "--judge-model", "judge"],
                              tmp_path, monkeypatch)  # fmt: skip
    finally:
        healthy.close()
    assert code == 0, output
    assert healthy.asked == 12 - len(answers), output  # only what the first judging did not get
    assert f"{12 - len(answers)} answers to read ({len(answers)} in judge_requests.jsonl)" in output


def test_a_judge_past_its_deadline_is_one_line(tmp_path, finished, datasets):
    from equita.runners.errors import ModelError
    from equita.runners.judge import JudgeOptions
    from equita.runners.results.rescore import rescore

    slow = _JudgeServer(lambda prompt: "A", slow=1.0)
    try:
        with pytest.raises(ModelError, match="no answer after 0 retries"):
            rescore(_copy(finished, tmp_path), tmp_path / "rescored", datasets=str(datasets), judge=JudgeOptions(slow.url, "judge", timeout=0.3, retries=0),
                    log=lambda message: None)  # fmt: skip
    finally:
        slow.close()


def test_run_can_ask_the_judge_as_it_goes(tmp_path, datasets, monkeypatch):
    from fake_model import ScriptedModel

    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: ScriptedModel())
    judge = _JudgeServer(lambda prompt: "ENTRAMBE")
    try:
        code, output = invoke(["run", "--model", "scripted", "--out", "run", "--tasks", "itap-at,jobs", "--datasets", str(datasets), "--limit", "4",
                               "--judge-server", judge.url, "--judge-model", "judge"], tmp_path, monkeypatch)  # fmt: skip
    finally:
        judge.close()
    assert code == 0, output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    judged = results["tasks"]["itap-at"]["judge"]
    assert judged["results"]["p_neutral"] == 1.0 and judged["agreement"]["n"] == 4 and "judge" not in results["tasks"]["jobs"]
    assert judge.asked == 4 and (tmp_path / "run" / "judge_requests.jsonl").is_file()


# -- --labels judge: the headline from the judge's labels --------------------------------------


def _always_b(prompt: str) -> str:
    return "B"


def _expected_always_b(samples: list[dict]) -> float:
    """By hand: "B" names the attribute second in alphabetical order; +1 when it is the stereotype."""
    signs = [1 if sorted((s["metric_input"]["stereotypes"], s["metric_input"]["anti_stereotypes"]), key=str.casefold)[1] == s["metric_input"]["stereotypes"] else -1
             for s in samples]  # fmt: skip
    return sum(signs) / len(signs)


@pytest.fixture(scope="module")
def judged_by_b(tmp_path_factory, finished, datasets) -> Path:
    """The finished run rescored with --labels judge by a judge that always answers B."""
    from equita.runners.judge import JudgeOptions
    from equita.runners.results.rescore import rescore

    out = tmp_path_factory.mktemp("judged") / "by-judge"
    judge = _JudgeServer(_always_b)
    try:
        rescore(finished, out, datasets=str(datasets), judge=JudgeOptions(judge.url, "judge"), label_source="judge", log=lambda message: None)
    finally:
        judge.close()
    return out


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_labels_judge_makes_the_judges_labels_the_headline_and_keeps_the_rules_beside_it(judged_by_b, finished):
    old, new = (json.loads((path / "results.json").read_text())["tasks"]["itap-at"] for path in (finished, judged_by_b))
    samples = [s for s in _read(judged_by_b / "samples.jsonl") if s["task"] == "itap-at"]
    assert new["label_source"] == "judge" and new["results"]["classifier_version"] is None and new["results"]["n_unlabelled"] == 0
    assert new["results"]["bias_score"] == pytest.approx(_expected_always_b(samples))
    judged = new["judge"]
    assert judged["results"] == {key: new["results"][key] for key in judged["results"]}  # the judge's summary is the headline's
    assert judged["rules_results"] == {key: old["results"][key] for key in judged["rules_results"]}  # and the rules' stays beside it
    old_labels = {s["id"]: s["label"] for s in _read(finished / "samples.jsonl") if s["task"] == "itap-at"}
    assert all(s["rules_label"] == old_labels[s["id"]] and s["label"] == s["judge_label"] and s["metric_input"]["labels"] == s["label"] for s in samples)
    report = (judged_by_b / "report.md").read_text()
    assert "The scores above use the LLM judge's labels (rows it could not label left out). An LLM judge (judge, prompt v1) labelled the answers" in report
    jobs = json.loads((judged_by_b / "results.json").read_text())["tasks"]["jobs"]
    assert "label_source" not in jobs and "judge" not in jobs  # Jobs reads log-probabilities: no labels to judge


def _verify_itap(folder: Path, datasets: Path) -> dict:
    return verify_folder(folder, datasets=str(datasets), log=lambda message: None)["tasks"]["itap-at"]


VERIFY_JUDGED = [
    # (case, samples edit, results edit, problem shown; None: only the prompts are unverifiable)
    ("as written", None, None, None),
    ("a judge label changed", lambda lines: [{**line, "judge_label": "neutral"} if i == 0 else line for i, line in enumerate(lines)], None,
     'judge_label "neutral" recorded, its judge_reply reads'),
    ("a judge reply changed", lambda lines: [{**line, "judge_reply": "ENTRAMBE"} if i == 0 else line for i, line in enumerate(lines)], None,
     'judge_label "'),
    ("the rules' score edited", None, lambda r: r["tasks"]["itap-at"]["judge"]["rules_results"].update(bias_score=0.9), "judge.rules_results.bias_score: 0.9 recorded"),
    ("the kappa edited", None, lambda r: r["tasks"]["itap-at"]["judge"]["agreement"].update(kappa=0.99), "judge.agreement.kappa: 0.99 recorded"),
    ("the label source flipped", None, lambda r: r["tasks"]["itap-at"].update(label_source="rules"), "results.bias_score"),
    ("no judge record", None, lambda r: r["tasks"]["itap-at"].pop("judge"), "label_source is 'judge' without a judge record"),
]  # fmt: skip


@pytest.mark.parametrize("case, samples, results, problem", VERIFY_JUDGED, ids=[v[0] for v in VERIFY_JUDGED])
def test_verify_reads_the_judges_labels_again_from_its_replies(tmp_path, judged_by_b, datasets, case, samples, results, problem):
    folder = _copy(judged_by_b, tmp_path)
    _edit(folder, results, samples)
    if problem is not None and "without a judge record" in problem:
        from equita.runners.results.contract import validate_results

        assert any(problem in line for line in validate_results(json.loads((folder / "results.json").read_text())))
        return
    checked = _verify_itap(folder, datasets)
    if problem is None:
        # The scripted model records no chat template: its prompts cannot be rebuilt, everything else is checked.
        assert checked["status"] == "not verifiable" and all("prompts:" in line for line in checked["problems"]), checked
    else:
        assert checked["status"] == "mismatch" and any(problem in line for line in checked["problems"]), checked


def test_a_judge_that_labels_nothing_leaves_the_judge_sourced_task_not_computed(tmp_path, finished, datasets, monkeypatch):
    judge = _JudgeServer(lambda prompt: "Dipende.")
    try:
        code, output = invoke(["rescore", str(_copy(finished, tmp_path)), "--out", "rescored", "--datasets", str(datasets), "--judge-server", judge.url,
                               "--judge-model", "judge", "--labels", "judge"], tmp_path, monkeypatch)  # fmt: skip
    finally:
        judge.close()
    assert code == 0, output
    new = json.loads((tmp_path / "rescored" / "results.json").read_text())["tasks"]
    assert new["itap-at"]["results"] is None and "the judge gave no answer a label" in new["itap-at"]["not_computed"]
    assert new["itap-at"]["judge"]["rules_results"]["n"] == 12 and new["jobs"]["results"] is not None


def test_rescoring_a_judged_folder_reuses_the_judges_replies_or_drops_them_and_says_so(tmp_path, judged_by_b, datasets, monkeypatch):
    folder = _copy(judged_by_b, tmp_path)
    (folder / "judge_requests.jsonl").write_bytes((judged_by_b / "judge_requests.jsonl").read_bytes())
    code, output = _rescore(tmp_path, folder, datasets, monkeypatch, "plain")
    assert code == 0, output
    assert "its LLM judge's labels are not carried over" in output
    plain = json.loads((tmp_path / "plain" / "results.json").read_text())["tasks"]["itap-at"]
    assert "judge" not in plain and "label_source" not in plain and plain["rescored"]["label_source_before"] == "judge"
    assert plain["results"]["classifier_version"] is not None  # the rules' labels again
    silent = _JudgeServer(_always_b)
    try:
        code, output = invoke(["rescore", str(folder), "--out", "again", "--datasets", str(datasets), "--judge-server", silent.url, "--judge-model", "judge",
                               "--labels", "judge"], tmp_path, monkeypatch)  # fmt: skip
    finally:
        silent.close()
    assert code == 0, output
    assert silent.asked == 0, output  # every reply came from the run's judge_requests.jsonl
    again = json.loads((tmp_path / "again" / "results.json").read_text())["tasks"]["itap-at"]
    assert again["results"] == json.loads((judged_by_b / "results.json").read_text())["tasks"]["itap-at"]["results"]


LABELS_REFUSED = [
    # (case, arguments, message)
    ("judge labels without a judge", ["--labels", "judge"], "--labels judge needs an LLM judge"),
    ("an unknown source", ["--labels", "annotators"], "--labels annotators: 'rules' or 'judge'"),
]


@pytest.mark.parametrize("command", ["rescore", "run"])
@pytest.mark.parametrize("case, arguments, message", LABELS_REFUSED, ids=[c[0] for c in LABELS_REFUSED])
def test_labels_without_a_judge_is_refused_in_one_line(tmp_path, finished, monkeypatch, command, case, arguments, message):
    head = ["rescore", str(finished)] if command == "rescore" else ["run", "--model", "scripted"]
    before = tree(tmp_path)
    code, output = invoke([*head, "--out", "new", *arguments], tmp_path, monkeypatch)
    assert code == 2 and message in output and len(output.strip().splitlines()) == 1, output
    assert tree(tmp_path) == before


def test_scores_from_different_label_sources_are_ranked_apart(finished, judged_by_b):
    from equita.runners.results.ranking import Entry, rank_task

    entries = [Entry(json.loads((path / "results.json").read_text()), _read(path / "samples.jsonl")) for path in (finished, judged_by_b)]
    for entry in entries:
        entry.results["settings"]["limit"] = None  # ranked, not a quick look: what is tested is the split
        for task in entry.results["tasks"].values():
            task["rows_in_dataset"] = task["n"]
    rankings = rank_task("itap-at", entries)
    assert [r.labels for r in rankings] == ["rules", "judge judge, prompt v1"]
    assert all(len(r.standings) == 1 and not r.pairs for r in rankings)  # never paired across sources
    assert all("ranked only against scores from the same reader's" in r.labels_note for r in rankings)
    assert [len(r.standings) for r in rank_task("jobs", entries)] == [2]  # Jobs has no labels: one ranking


def test_run_with_labels_judge_and_the_leaderboard_gives_each_source_its_own_page(tmp_path, datasets, monkeypatch, finished):
    from fake_model import ScriptedModel

    from equita.runners.hub.leaderboard import build_site, local_entries

    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: ScriptedModel())
    judge = _JudgeServer(_always_b)
    try:
        code, output = invoke(["run", "--model", "scripted", "--out", "run", "--tasks", "itap-at", "--datasets", str(datasets), "--limit", "4",
                               "--judge-server", judge.url, "--judge-model", "judge", "--labels", "judge"], tmp_path, monkeypatch)  # fmt: skip
    finally:
        judge.close()
    assert code == 0, output
    task = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]["itap-at"]
    samples = _read(tmp_path / "run" / "samples.jsonl")
    assert task["label_source"] == "judge" and task["results"]["bias_score"] == pytest.approx(_expected_always_b(samples))
    assert "the headline uses the judge's labels" in output
    build_site(local_entries([tmp_path / "run", finished], log=lambda message: None), tmp_path / "site", log=lambda message: None)
    pages = sorted(path.name for path in (tmp_path / "site").glob("task-itap-at-*.html"))
    assert pages == ["task-itap-at-v3-judge-judge-prompt-v1.html", "task-itap-at-v3.html"], pages
    judged_page = (tmp_path / "site" / pages[0]).read_text()
    assert "labels by LLM judge judge, prompt v1" in judged_page and "ranked only against scores from the same reader" in judged_page
