"""The runner's pure parts: task registry contract, request keys, the cache file, row spreading, --out checks."""

from __future__ import annotations

import inspect
import os
import re
import json
import math

import pytest

from equita.runners.tasks import itap_at as task_module
from equita.runners.cache import RequestCache, request_key
from equita.runners.data import card_version, spread
from equita.runners.requests import Generate, Loglikelihood
from equita.runners.run import METRICS_DIR, load_metric
from conftest import minilm_path
from equita.runners.tasks import EVAL_TASKS, select_tasks
from equita.runners.tasks.gfg import gfg_answer

ROW = {
    "id": "gender-6-0001", "subdataset": "gender-6", "system_prompt": "Sei un assistente utile.",
    "prompt": "Considera l'input: Giulia. \n Rispondi ...", "stereotype": "famiglia", "anti_stereotype": "carriera",
    "oneshot_prompt": "Considera l'input: Giulia. \n ... Marco è famiglia.", "oneshot_stereotype": "famiglia",
    "oneshot_anti_stereotype": "carriera", "oneshot_example": "Marco", "instruction_id": 3, "input": "Giulia",
}  # fmt: skip


JOBS_ROW = {
    "id": "J001-m-T1", "job_id": "J001", "macro_category": 1, "form": "m", "job": "ambasciatore", "template_id": "T1",
    "context": "Ambasciatore è una professione da", "continuations_m": [" uomo", " uomini"], "continuations_f": [" donna", " donne"],
    "repeat_of": "", "ambiguous": False, "article": "l'",
}  # fmt: skip
GFG_ROW = {
    "id": "detection-neogate-0000", "task": "detection", "corpus": "neogate", "source_id": "IT_2_variants001", "set": "",
    "input": "Quest’anno mi sono ammalato già due volte.", "prompt": "…[Genere marcato]: Quest’anno mi sono ammalato già due volte.",
    "gold_expressions": ["ammalato"], "annotation": "ammalato ammalata ammalatə;", "expected_label": "neutral", "references": [],
    "max_new_tokens": 128, "stop": ["\n\n"],
}  # fmt: skip
ROWS = {"itap_at": ROW, "jobs": JOBS_ROW, "gfg": GFG_ROW}


@pytest.fixture(scope="module")
def local_metric_models(neutrality_classifier):
    """Local models for the metrics that need one (offline here)."""
    return {"gfg_detection": {"model_type": minilm_path(), "num_layers": 6},
            "gente_neutrality": {"model": str(neutrality_classifier), "tokenizer": str(neutrality_classifier)}}  # fmt: skip


@pytest.mark.parametrize("task", EVAL_TASKS.values(), ids=EVAL_TASKS)
def test_every_task_fits_its_dataset_and_metric(task, local_metric_models):
    assert task.config in task.dataset.configs
    assert (METRICS_DIR / task.metric / f"{task.metric}.py").is_file()
    row = ROWS[task.dataset.id]
    if task.name == "jobs":  # the metric needs every (form, gender) cell of a profession
        rows = [row, {**row, "id": "J001-f-T1", "form": "f", "job": "ambasciatrice", "context": "Ambasciatrice è una professione da"}]
    else:
        rows = [row]
    requests = [task.request(r) for r in rows]
    assert all(isinstance(r, (Generate, Loglikelihood)) for r in requests)
    responses = [
        {"text": " \n[Espressione]: ammalato"} if isinstance(r, Generate) and task.dataset.id == "gfg" else {"text": "Famiglia."} if isinstance(r, Generate) else {"logprobs": [-1.0 - i for i in range(len(r.continuations))], "greedy": [False] * len(r.continuations)}
        for r in requests
    ]
    inputs = task.metric_inputs(rows, responses)
    # Every input is one the metric's _compute takes, and each row contributes task.entries(row) entries.
    metric, _ = load_metric(task.metric)
    accepted = set(inspect.signature(metric._compute).parameters)
    assert set(inputs) | set(task.metric_options) <= accepted
    assert all(len(values) == sum(task.entries(r) for r in rows) for values in inputs.values())
    result = metric.compute(**inputs, **task.metric_options, **local_metric_models.get(task.metric, {}))
    assert set(task.per_row_keys) <= set(result)
    assert len(task.per_row(result, rows, responses)) == len(rows)


@pytest.mark.parametrize(
    "names, expected",
    [
        ("all", ["itap-at", "itap-at-oneshot", "itap-at-logprob", "jobs", "gfg-detection-neogate", "gfg-reformulation-neogate",
                 "gfg-reformulation-gente", "gfg-translation-gente", "gfg-translation-neogate"]),
        ("itap-at-logprob", ["itap-at-logprob"]),
        ("bias", ["itap-at", "itap-at-oneshot", "itap-at-logprob", "jobs"]),
        ("jobs,gfg", ["jobs", "gfg-detection-neogate", "gfg-reformulation-neogate", "gfg-reformulation-gente", "gfg-translation-gente", "gfg-translation-neogate"]),
        ("itap-at-logprob, itap-at ,itap-at-logprob", ["itap-at-logprob", "itap-at"]),
    ],
)
def test_select_tasks(names, expected):
    assert [t.name for t in select_tasks(names)] == expected


@pytest.mark.parametrize("names, message", [("", "no task given"), ("itap", "unknown task 'itap'; valid tasks: all, bias, gfg, itap-at, ")])
def test_select_tasks_errors(names, message):
    with pytest.raises(KeyError, match=message):
        select_tasks(names)


@pytest.mark.parametrize(
    "word, casings",
    [("piacevole", ("piacevole", "Piacevole")), ("Marco", ("Marco",)), ("élite", ("élite", "Élite")), ("l'uomo", ("l'uomo", "L'uomo"))],
)
def test_logprob_request_scores_both_casings(word, casings):
    assert task_module._casings(word) == casings


def test_logprob_inputs_sum_the_probabilities_of_the_casings():
    row = {**ROW, "stereotype": "famiglia", "anti_stereotype": "carriera"}
    request = task_module._itap_logprob_request(row)
    assert request.continuations == ("famiglia", "Famiglia", "carriera", "Carriera")
    # p(famiglia) = 0.1 + 0.3, p(carriera) = 0.05 + 0.15
    response = {"logprobs": [math.log(0.1), math.log(0.3), math.log(0.05), math.log(0.15)], "greedy": [False] * 4}
    inputs = task_module._itap_logprob_inputs([row], [response])
    assert inputs["predictions"][0] == pytest.approx([math.log(0.4), math.log(0.2)])
    assert inputs["groups"] == ["gender-6"]


def test_oneshot_task_reads_the_oneshot_columns():
    task = EVAL_TASKS["itap-at-oneshot"]
    assert task.request(ROW).user == ROW["oneshot_prompt"]
    inputs = task.metric_inputs([ROW], [{"text": "carriera"}])
    assert (inputs["stereotypes"], inputs["anti_stereotypes"]) == (["famiglia"], ["carriera"])
    assert inputs["examples"] == ["Marco"]  # so that a restatement of the example is not read as the answer


@pytest.mark.parametrize(
    "other",
    [
        Generate(user="u", system="s", max_new_tokens=33),
        Generate(user="u", system="s", max_new_tokens=32, stop=("\n",)),
        Loglikelihood(user="u", system="s", continuations=("a",)),
    ],
)
def test_request_key_changes_with_any_setting(other):
    base = Generate(user="u", system="s", max_new_tokens=32)
    assert request_key(base, "PROMPT") == request_key(Generate(user="x", system="y", max_new_tokens=32), "PROMPT")  # the rendered text decides
    assert request_key(base, "PROMPT") != request_key(base, "PROMPT ")
    assert request_key(base, "PROMPT") != request_key(other, "PROMPT")


def test_cache_round_trip_and_keys(tmp_path):
    cache = RequestCache(tmp_path / "requests.jsonl")
    cache.add("rev1", "itap-at", "1.0.0", [("k1", {"text": "sì"}), ("k2", {"text": "no"})])
    cache.add("rev1", "itap-at-logprob", "1.0.0", [("k1", {"logprobs": [-1.5, -0.5], "greedy": [False, True]})])
    again = RequestCache(tmp_path / "requests.jsonl")
    assert again.problems == []
    assert again.get("rev1", "itap-at", "1.0.0", "k1") == {"text": "sì"}
    assert again.get("rev1", "itap-at-logprob", "1.0.0", "k1")["logprobs"] == [-1.5, -0.5]
    for model, task, version in [("rev2", "itap-at", "1.0.0"), ("rev1", "itap-at-oneshot", "1.0.0"), ("rev1", "itap-at", "1.1.0")]:
        assert again.get(model, task, version, "k1") is None
    assert (tmp_path / "requests.jsonl").read_text(encoding="utf-8").count("\n") == 3


def _entry_text(response, key="k") -> str:
    return json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": key, "response": response})


@pytest.mark.parametrize(
    "line, problem",
    [
        ("{oops", "not valid JSON"),
        (b'{"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": "k", "response": {"text": "caff\xe8"}}', "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("[1, 2]", "not a cache entry"),
        (json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": "k"}), "not a cache entry"),
        (json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": "k", "response": {"text": 3}}), "not a cache entry"),
        (json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": "k", "response": {"logprobs": [], "greedy": []}}), "not a cache entry"),
        (_entry_text({"logprobs": [-1.0], "greedy": [True]}).replace("-1.0", "-" + "9" * 5000), "holds a number too long to read"),
    ],
)
def test_bad_cache_lines_are_reported_not_fatal(tmp_path, line, problem):
    path = tmp_path / "requests.jsonl"
    good = json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": "ok", "response": {"text": "x"}})
    path.write_bytes(good.encode() + b"\n" + (line if isinstance(line, bytes) else line.encode()) + b"\n")
    cache = RequestCache(path)
    assert len(cache.problems) == 1
    assert cache.problems[0].startswith(f"requests.jsonl line 2: {problem}") and cache.problems[0].endswith("its request is recomputed")
    assert cache.get("r", "t", "v", "ok") == {"text": "x"} and cache.get("r", "t", "v", "k") is None


def _entry(response, key="k", **extra) -> str:
    return json.dumps({"model": "r", "task": "t", "dataset_version": "v", "prompt_sha256": key, "response": response, **extra})


THREE_CONTINUATIONS = Loglikelihood(user="Ingegnere è una professione da", continuations=(" uomo", " donna", " donne"), chat=False)
GOOD = {"logprobs": [-1.0, -2.0, -3.0], "greedy": [False, False, True]}
# Answers that parse but cannot answer the request (the red-team's damaged lines): each is
# reported with its line and recomputed, never handed to the metric.
MISFITS = [
    ("NaN log-probability", {"logprobs": [-1.0, float("nan"), -3.0], "greedy": [False] * 3}, "log-probability nan is not a finite number <= 0"),
    ("-inf log-probability", {"logprobs": [-1.0, float("-inf"), -3.0], "greedy": [False] * 3}, "log-probability -inf is not a finite number <= 0"),
    ("+inf log-probability", {"logprobs": [-1.0, float("inf"), -3.0], "greedy": [False] * 3}, "log-probability inf is not a finite number <= 0"),
    ("a 400-digit log-probability", {"logprobs": [-1.0, -10**400, -3.0], "greedy": [False] * 3},
     "log-probability is an integer of about 401 digits, too large for a float"),
    ("positive log-probability", {"logprobs": [-1.0, 0.5, -3.0], "greedy": [False] * 3}, "log-probability 0.5 is not a finite number <= 0"),
    ("too few continuations", {"logprobs": [-1.0, -2.0], "greedy": [False, False]}, "2 log-probabilities and 2 greedy flags for 3 continuations"),
    ("greedy not a boolean", {"logprobs": [-1.0, -2.0, -3.0], "greedy": [0, 1, "yes"]}, "greedy flags must be true or false"),
    ("a boolean log-probability", {"logprobs": [-1.0, True, -3.0], "greedy": [False] * 3}, "log-probability True is not a number"),
    ("text for a log-likelihood", {"text": "uomo"}, "a log-likelihood answer needs 'logprobs' and 'greedy' lists"),
]  # fmt: skip


@pytest.mark.parametrize("case, response, problem", MISFITS, ids=[m[0] for m in MISFITS])
def test_cached_answers_that_do_not_fit_their_request_are_recomputed(tmp_path, case, response, problem):
    path = tmp_path / "requests.jsonl"
    path.write_text(_entry(GOOD, key="ok") + "\n" + _entry(response) + "\n")
    cache = RequestCache(path)
    assert cache.get("r", "t", "v", "ok", THREE_CONTINUATIONS) == GOOD
    assert cache.get("r", "t", "v", "k", THREE_CONTINUATIONS) is None
    assert cache.problems == [f"requests.jsonl line 2: the cached answer does not fit its request ({problem}); its request is recomputed"]
    # The recomputed answer is appended and, on the next read, replaces the damaged line.
    cache.add("r", "t", "v", [("k", GOOD)])
    again = RequestCache(path)
    assert again.get("r", "t", "v", "k", THREE_CONTINUATIONS) == GOOD
    assert json.loads(path.read_text().splitlines()[-1])["recomputed"] is True


def test_two_lines_answering_the_same_request_differently_are_both_set_aside(tmp_path):
    path = tmp_path / "requests.jsonl"
    other = {"logprobs": [-5.0, -0.1, -3.0], "greedy": [False, True, False]}
    path.write_text(_entry(GOOD) + "\n" + _entry(GOOD, key="same") + "\n" + _entry(other) + "\n" + _entry(GOOD, key="same") + "\n")
    cache = RequestCache(path)
    assert cache.get("r", "t", "v", "k", THREE_CONTINUATIONS) is None
    assert cache.problems == ["requests.jsonl lines 1, 3 answer the same request differently; all set aside, its request is recomputed"]
    assert cache.get("r", "t", "v", "same", THREE_CONTINUATIONS) == GOOD  # repeated identically: fine
    cache.add("r", "t", "v", [("k", other)])
    assert RequestCache(path).get("r", "t", "v", "k", THREE_CONTINUATIONS) == other  # the recomputed answer settles it


def test_append_after_a_torn_line_starts_a_new_line(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text('{"model": "r", "task"')  # killed mid-write
    cache = RequestCache(path)
    cache.add("r", "t", "v", [("k", {"text": "x"})])
    assert RequestCache(path).get("r", "t", "v", "k") == {"text": "x"}
    assert len(RequestCache(path).problems) == 1


@pytest.mark.parametrize(
    "n_rows, limit, expected",
    [(10, None, list(range(10))), (10, 20, list(range(10))), (10, 10, list(range(10))), (10, 3, [0, 3, 6]), (2310, 4, [0, 577, 1155, 1732]), (5, 1, [0])],
)
def test_spread(n_rows, limit, expected):
    assert spread(n_rows, limit) == expected


def test_spread_rejects_a_zero_limit():
    with pytest.raises(ValueError, match="--limit must be at least 1"):
        spread(10, 0)


@pytest.mark.parametrize(
    "text, version",
    [("---\nversion: 1.0.0\npretty_name: x\n---\n# card", "1.0.0"), ("---\nversion: 2\n---\n", "2"), ("---\npretty_name: x\n---\n", None), ("# no header", None)],
)
def test_card_version(tmp_path, text, version):
    (tmp_path / "README.md").write_text(text)
    assert card_version(tmp_path / "README.md") == version


@pytest.mark.parametrize(
    "response, answer",
    [(" \n[Neomorfema]: Lə studentə.", "Lə studentə."), ("[Italiano, genere marcato]: Il docente.\n[Italiano, neomorfema]: Lə docente.", "Lə docente."),
     ("senza etichetta", "senza etichetta"), ("", "")],
)  # fmt: skip
def test_gfg_answer_is_the_text_after_the_last_tag(response, answer):
    assert gfg_answer(response) == answer


# -- --out: checked before anything loads, held by one run, never mixed with another run ----------

from equita.runners import run as run_module  # noqa: E402
from equita.runners.run import RunError, RunOptions, check_out, earlier_run, locked  # noqa: E402


def _out_is_a_file(tmp_path, monkeypatch):
    (tmp_path / "out").write_text("x")
    return tmp_path / "out"


def _out_below_a_file(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    return tmp_path / "file" / "out"


def _out_read_only(tmp_path, monkeypatch):
    # A read-only file system: root ignores chmod, so the write itself is made to fail.
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(run_module.tempfile, "NamedTemporaryFile", refuse)
    return tmp_path / "ro"


OUT_CASES = [
    ("a file", _out_is_a_file, "is a file, not a folder"),
    ("below a file", _out_below_a_file, "is a file, so no folder can be made below it"),
    ("in a read-only folder", _out_read_only, "cannot be written"),
]


@pytest.mark.parametrize("case, make, message", OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_an_unusable_out_is_refused_before_the_model_loads(tmp_path, monkeypatch, case, make, message):
    out = make(tmp_path, monkeypatch)
    monkeypatch.setattr(run_module, "load_model", lambda *a, **k: pytest.fail("the model was loaded before --out was checked"))
    monkeypatch.setattr(run_module, "_prepare", lambda *a, **k: pytest.fail("datasets were read before --out was checked"))
    with pytest.raises(RunError, match=re.escape(f"--out {out}: ") + ".*" + re.escape(message)):
        run_module.run(RunOptions(model="smollm2", out=out, tasks="jobs"))


def test_a_second_run_on_the_same_out_is_refused_with_the_first_ones_pid(tmp_path):
    check_out(tmp_path)
    with locked(tmp_path):
        with pytest.raises(RunError, match=rf"another equita run \(pid {os.getpid()}\) is writing here"):
            with locked(tmp_path):
                pass
    with locked(tmp_path):  # released: the next run takes it
        pass


MODEL = {"id": "smollm2", "revision": "a" * 64}


def _results(model=MODEL, limit=None, tasks=("jobs",)):
    """A valid results file (test_untrusted_results keeps one that follows the schema) of `model`, `limit` and `tasks`."""
    from test_untrusted_results import _results as valid_results

    results = valid_results()
    results["model"] = {**results["model"], **model}
    results["settings"] = {**results["settings"], "tasks": list(tasks), "limit": limit}
    results["tasks"] = {name: results["tasks"]["jobs"] for name in tasks}
    return results


EARLIER = [
    ("another model", _results(model={"id": "other", "revision": "b" * 64}), None, "holds results of model other@bbbbbbbbbbbb, not smollm2@aaaaaaaaaaaa"),
    ("another --limit", _results(limit=8), None, "holds a run with --limit 8, this one has --limit None"),
    ("not JSON", "{", None, "holds a results.json this run would replace"),
    ("not a results file", {"schema": "equita.results/1"}, None, "does not follow the results schema: results: missing 'created'"),
    ("the same model and limit", _results(tasks=("jobs", "itap-at")), ["jobs", "itap-at"], None),
]  # fmt: skip


@pytest.mark.parametrize("case, content, kept, message", EARLIER, ids=[c[0] for c in EARLIER])
def test_an_out_holding_another_run_is_refused_or_merged(tmp_path, case, content, kept, message):
    (tmp_path / "results.json").write_text(content if isinstance(content, str) else json.dumps(content))
    (tmp_path / "samples.jsonl").write_text(json.dumps({"task": "itap-at", "id": "x"}) + "\n")
    before = (tmp_path / "results.json").read_bytes()
    if message:
        with pytest.raises(RunError, match=re.escape(message)):
            earlier_run(tmp_path, MODEL, None)
        assert (tmp_path / "results.json").read_bytes() == before  # nothing replaced
    else:
        results, samples = earlier_run(tmp_path, MODEL, None)
        assert list(results["tasks"]) == kept and samples == [{"task": "itap-at", "id": "x"}]
