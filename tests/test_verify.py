"""`equita verify` and the verification `equita submit` runs: every score of a real run is
recomputed from its samples; every kind of edit to a results folder is caught and named."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import hub_server
from equita.builders import jobs
from equita.builders.common import table_path
from equita.runners.cli import app
from equita.runners.run import RunOptions, run
from equita.runners.results.verify import VerifyError, verify_folder

jobs_version = jobs.VERSION  # the Jobs dataset as built

LIMIT = 3  # ItaP-AT rows, Jobs professions (each 2 forms x 3 templates = 6 sentences)
JOBS_ROWS = LIMIT * 6 + 3  # and the three templates' neutral sentences, which every --limit keeps


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, itap_dir):
    folder = tmp_path_factory.mktemp("datasets")
    shutil.copytree(itap_dir, folder / "itap_at")
    jobs.build(folder / "jobs")
    return folder


@pytest.fixture(scope="module")
def genuine(tmp_path_factory, datasets, tiny_model_dir):
    """A real run: a tiny Llama with a real chat template, on ItaP-AT (generation) and Jobs (log-likelihood)."""
    out = tmp_path_factory.mktemp("run") / "tiny"
    run(RunOptions(model=str(tiny_model_dir), out=out, tasks="itap-at,jobs", datasets=str(datasets), limit=LIMIT, batch_size=8), log=lambda m: None)
    return out


def read(folder):
    results = json.loads((folder / "results.json").read_text())
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return results, samples


def write(folder, results, samples):
    (folder / "results.json").write_text(json.dumps(results))
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))


def first(samples, task):
    return next(s for s in samples if s["task"] == task)


# Each edit changes a copy of the genuine folder and returns what the problem must say, from the
# values it replaced (the expected text is the edit's own numbers, not the code's output).
def edit_headline(results, samples):
    task = results["tasks"]["itap-at"]["results"]
    original, task["bias_score"] = task["bias_score"], 0.875
    return "itap-at", "mismatch", f"results.bias_score: 0.875 recorded, {json.dumps(original)} recomputed"


def edit_group(results, samples):
    groups = results["tasks"]["itap-at"]["results"]["groups"]
    name = next(iter(groups))
    original, groups[name]["bias_score"] = groups[name]["bias_score"], -0.625
    return "itap-at", "mismatch", f"results.groups.{name}.bias_score: -0.625 recorded, {json.dumps(original)} recomputed"


def edit_response(results, samples):
    sample = first(samples, "itap-at")
    sample["response"]["text"] = "donne"
    # (the recorded answer, long, is shown cut short between the two)
    return "itap-at", "mismatch", (f"sample {sample['id']}: metric_input.predictions: ", ' recorded, "donne" recomputed')


def edit_logprob(results, samples):
    sample = first(samples, "jobs")
    recorded = sample["response"]["logprobs"][0]
    sample["response"]["logprobs"][0] = recorded - 1.0
    return "jobs", "mismatch", f"sample {sample['id']}: metric_input.logprobs[0]: {json.dumps(recorded)} recorded, {json.dumps(recorded - 1.0)} recomputed"


def edit_label(results, samples):
    sample = first(samples, "jobs")
    flipped = {"m": "f", "f": "m", "tie": "m"}[sample["label"]]
    recorded, sample["label"] = sample["label"], flipped
    return "jobs", "mismatch", f"sample {sample['id']}: label: \"{flipped}\" recorded, \"{recorded}\" recomputed"


def edit_prompt(results, samples):
    sample = first(samples, "itap-at")
    sample["prompt"] = sample["prompt"].replace("<|im_start|>assistant", "<|im_start|>assistant Risposta: uomini")
    return "itap-at", "mismatch", f"sample {sample['id']}: prompt_sha256 is not the key of its request and prompt"


def edit_user_text(results, samples):
    # A prompt rewritten with its keys made to match: the row's own text is no longer in it.
    from equita.runners.cache import request_key
    from equita.runners.requests import Generate

    task = results["tasks"]["itap-at"]
    sample = first(samples, "itap-at")
    sample["prompt"] = sample["prompt"].replace(sample["prompt"].split("<|im_start|>user\n")[1][:20], "Rispondi: uomini. ")
    sample["prompt_sha256"] = request_key(Generate(user="", max_new_tokens=32), sample["prompt"])
    task["prompts_sha256"] = hashlib.sha256("".join(s["prompt_sha256"] for s in samples if s["task"] == "itap-at").encode()).hexdigest()
    return "itap-at", "mismatch", f"sample {sample['id']}: its prompt is not the one its task renders from the dataset row (from character "


def edit_remove(results, samples):
    samples.remove(first(samples, "jobs"))
    return "jobs", "mismatch", f"n is {JOBS_ROWS} but samples.jsonl holds {JOBS_ROWS - 1} samples of jobs"


def edit_id(results, samples):
    first(samples, "itap-at")["id"] = "nope"
    return "itap-at", "mismatch", 'sample ids not in itap_at/all: "nope"'


def edit_duplicate(results, samples):
    jobs_samples = [s for s in samples if s["task"] == "jobs"]
    samples[samples.index(jobs_samples[1])] = jobs_samples[0]
    return "jobs", "mismatch", f"sample ids appear more than once: {json.dumps(jobs_samples[0]['id'])}"


def edit_stray(results, samples):
    samples.append({**first(samples, "itap-at"), "task": "itap-at-oneshot"})
    return "itap-at-oneshot", "mismatch", "the samples hold task 'itap-at-oneshot' (1 of them), which the results do not have"


def edit_options(results, samples):
    results["tasks"]["jobs"]["metric"]["options"]["seed"] = 1
    return "jobs", "not verifiable", "metric options differ from this equita's jobs: seed 1 recorded, 0 here"


def edit_model_option(results, samples):
    results["tasks"]["jobs"]["metric"]["options"]["model"] = "/somewhere/else"
    return "jobs", "not verifiable", "metric options model chose the metric's model for the run; it is not loaded from a results file"


def edit_unknown_task(results, samples):
    results["tasks"]["itap-at-v9"] = results["tasks"].pop("itap-at")
    for sample in samples:
        sample["task"] = "itap-at-v9" if sample["task"] == "itap-at" else sample["task"]
    return "itap-at-v9", "not verifiable", "unknown task 'itap-at-v9'"


def edit_not_computed(results, samples):
    results["tasks"]["itap-at"].update(results=None, not_computed="the metric's model could not be loaded")
    return "itap-at", "not computed", "not computed: the metric's model could not be loaded"


EDITS = {
    "headline": edit_headline,
    "group value": edit_group,
    "generated answer": edit_response,
    "log-probability": edit_logprob,
    "per-row label": edit_label,
    "prompt": edit_prompt,
    "row text with matching keys": edit_user_text,
    "sample removed": edit_remove,
    "sample id not in the dataset": edit_id,
    "sample twice": edit_duplicate,
    "samples of a task not in the results": edit_stray,
    "fixed metric option": edit_options,
    "metric option naming a model": edit_model_option,
    "unknown task": edit_unknown_task,
    "not computed": edit_not_computed,
}


def test_a_genuine_run_verifies(genuine, datasets):
    verification = verify_folder(genuine, datasets=str(datasets))
    assert verification == {"verified": True, "equita": "0.2.0",
                            "tasks": {"itap-at": {"status": "verified", "problems": []}, "jobs": {"status": "verified", "problems": []}}}  # fmt: skip


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_an_edited_folder_is_caught_and_named(genuine, datasets, tmp_path, edit):
    folder = tmp_path / "results"
    shutil.copytree(genuine, folder)
    results, samples = read(folder)
    task, status, message = edit(results, samples)
    write(folder, results, samples)
    verification = verify_folder(folder, datasets=str(datasets))
    entry = verification["tasks"][task]
    assert entry["status"] == status, entry
    fragments = message if isinstance(message, tuple) else (message,)
    assert any(all(f in problem for f in fragments) for problem in entry["problems"]), entry["problems"]
    # The other task is untouched and still verifies; only a computed task that fails makes the whole fail.
    others = {name: e["status"] for name, e in verification["tasks"].items() if name != task}
    assert set(others.values()) == {"verified"}
    assert verification["verified"] is (status == "not computed")


class Metric:
    """Stands in for a metric module whose own model is missing (GFG's BERTScore encoder, the neutrality classifier)."""

    def compute(self, **inputs):
        raise OSError("bert-base-multilingual-cased is not in the cache and the Hub is offline")


@pytest.mark.parametrize("module, status, message", [
    ("model missing", "not verifiable", "jobs_bias's model could not be loaded: bert-base-multilingual-cased is not in the cache and the Hub is offline"),
    ("code changed", "verified", "metric jobs_bias: its code differs from the run's (module_sha256 "),
])  # fmt: skip
def test_the_metric_module_at_hand_is_said(genuine, datasets, monkeypatch, module, status, message):
    from equita.runners.results import verify

    real = verify.load_metric
    fake = {"model missing": lambda name: (Metric(), real(name)[1]), "code changed": lambda name: (real(name)[0], "0" * 64)}[module]
    monkeypatch.setattr(verify, "load_metric", fake)
    entry = verify_folder(genuine, datasets=str(datasets))["tasks"]["jobs"]
    assert entry["status"] == status and entry["problems"][-1].startswith(message), entry


def test_a_dataset_at_another_revision_is_not_verifiable(genuine, datasets, tmp_path):
    other = tmp_path / "datasets"
    tables = tmp_path / "tables"
    shutil.copytree(table_path("jobs", "professions.tsv").parent, tables)
    path = tables / "professions.tsv"
    path.write_text(path.read_text(encoding="utf-8").replace("ambasciatore\tambasciatrice", "ambasciatore\tambasciatora", 1), encoding="utf-8")
    jobs.build(other / "jobs", tables_dir=tables)  # the same version, other data
    verification = verify_folder(genuine, datasets=str(other))
    recorded = json.loads((genuine / "results.json").read_text())["tasks"]["jobs"]["dataset"]["revision"]
    entry = verification["tasks"]["jobs"]
    assert entry["status"] == "not verifiable" and verification["verified"] is False
    assert entry["problems"][0].startswith(f"dataset jobs: computed on revision {recorded}, the copy at hand is revision manifest-sha256:")
    assert recorded not in entry["problems"][0].split("the copy at hand")[1]
    assert verification["tasks"]["itap-at"]["status"] == "not verifiable"  # that folder has no itap_at


def broken_line(folder):
    with (folder / "samples.jsonl").open("a") as handle:
        handle.write('{"task": "jobs", "id": \n')
    return f"samples.jsonl line {LIMIT + JOBS_ROWS + 1}: not valid JSON"


def a_list(folder):
    with (folder / "samples.jsonl").open("a") as handle:
        handle.write("\n[1, 2]\n")
    return f"samples.jsonl line {LIMIT + JOBS_ROWS + 2}: not a JSON object (a sample is one object; this is a list)"


def no_task(folder):
    with (folder / "samples.jsonl").open("a") as handle:
        handle.write('{"id": "x"}\n')
    return f"sample {LIMIT + JOBS_ROWS + 1}: no task name"


BAD_INPUT = {
    "no samples.jsonl": (lambda folder: (folder / "samples.jsonl").unlink() or "no samples.jsonl"),
    "no results.json": (lambda folder: (folder / "results.json").unlink() or "no results.json"),
    "a line that is not JSON": broken_line,
    "a line that is not an object": a_list,
    "a sample without a task": no_task,
}


@pytest.mark.parametrize("damage", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_a_one_line_error_and_exit_2(genuine, datasets, tmp_path, damage):
    folder = tmp_path / "results"
    shutil.copytree(genuine, folder)
    message = damage(folder)
    with pytest.raises(VerifyError) as raised:
        verify_folder(folder, datasets=str(datasets))
    assert message in str(raised.value) and "\n" not in str(raised.value)
    result = CliRunner().invoke(app, ["verify", str(folder), "--datasets", str(datasets)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2 and message in " ".join(result.output.split())


@pytest.mark.parametrize("edit, code, shown", [(None, 0, "verified"), ("headline", 1, "results.bias_score: 0.875 recorded"),
                                               ("unknown task", 1, "not verifiable")])  # fmt: skip
def test_command_exit_codes(genuine, datasets, tmp_path, edit, code, shown):
    folder = tmp_path / "results"
    shutil.copytree(genuine, folder)
    if edit:
        results, samples = read(folder)
        EDITS[edit](results, samples)
        write(folder, results, samples)
    result = CliRunner().invoke(app, ["verify", str(folder), "--datasets", str(datasets)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code and shown in " ".join(result.output.split())


# -- the prompts, rendered again and compared whole ------------------------------------------------

HINT = "\nSuggerimento: rispondi con la parola dello stereotipo."


def rig_prompts(folder, datasets, task_name="itap-at"):
    """The red-team's D5 edit: a hint after every user text of a task, each key and the task's
    prompts_sha256 recomputed to match, answers and scores left as they were."""
    from equita.runners import data
    from equita.runners.cache import request_key
    from equita.runners.tasks import EVAL_TASKS

    task = EVAL_TASKS[task_name]
    rows = {r["id"]: r for r in data.load_rows(task.config, task.split, *data.locate(task.dataset, str(datasets), None, log=lambda m: None))}
    results, samples = read(folder)
    for sample in samples:
        if sample["task"] == task_name:
            request = task.request(rows[sample["id"]])
            user = json.dumps(request.user, ensure_ascii=False)[1:-1] if sample["prompt"].startswith('{"messages"') else request.user
            assert user in sample["prompt"]
            sample["prompt"] = sample["prompt"].replace(user, user + (json.dumps(HINT)[1:-1] if user != request.user else HINT))
            sample["prompt_sha256"] = request_key(request, sample["prompt"])
    keys = "".join(s["prompt_sha256"] for s in samples if s["task"] == task_name)
    results["tasks"][task_name]["prompts_sha256"] = hashlib.sha256(keys.encode()).hexdigest()
    write(folder, results, samples)


def test_an_in_process_run_records_its_chat_template_and_verifies(genuine, datasets, tiny_model_dir):
    from transformers import AutoTokenizer

    results, _ = read(genuine)
    chat_format = results["settings"]["chat_format"]
    assert chat_format["format"] == "chat_template"
    assert chat_format["template"] == AutoTokenizer.from_pretrained(tiny_model_dir).get_chat_template()
    assert chat_format["template_sha256"] == hashlib.sha256(chat_format["template"].encode()).hexdigest()
    assert chat_format["special_tokens"]["eos_token"] == "<|im_end|>"
    assert verify_folder(genuine, datasets=str(datasets))["verified"] is True


def test_a_model_without_a_chat_template_records_plain_prompts_and_verifies(tiny_plain_model_dir, datasets, tmp_path):
    out = tmp_path / "plain"
    run(RunOptions(model=str(tiny_plain_model_dir), out=out, tasks="itap-at", datasets=str(datasets), limit=1), log=lambda m: None)
    results, samples = read(out)
    assert results["settings"]["chat_format"] == {"format": "plain"} and samples[0]["prompt"].endswith("\nRisposta:")
    assert verify_folder(out, datasets=str(datasets))["tasks"]["itap-at"] == {"status": "verified", "problems": []}
    rig_prompts(out, datasets)
    assert verify_folder(out, datasets=str(datasets))["tasks"]["itap-at"]["status"] == "mismatch"


def test_a_prompt_with_a_hint_added_is_a_mismatch_though_its_keys_match(genuine, datasets, tmp_path):
    folder = tmp_path / "rigged"
    shutil.copytree(genuine, folder)
    rig_prompts(folder, datasets)
    verification = verify_folder(folder, datasets=str(datasets))
    entry = verification["tasks"]["itap-at"]
    assert entry["status"] == "mismatch" and verification["verified"] is False
    assert "its prompt is not the one its task renders from the dataset row" in entry["problems"][0]
    assert "Suggerimento" in entry["problems"][0]  # where the prompts part
    assert not any("prompt_sha256" in p or "prompts_sha256" in p for p in entry["problems"])  # the keys were made to match
    assert verification["tasks"]["jobs"]["status"] == "verified"


def test_a_results_folder_without_a_chat_format_is_not_verifiable_for_chat_prompts(genuine, datasets, tmp_path):
    folder = tmp_path / "older"
    shutil.copytree(genuine, folder)
    results, samples = read(folder)
    del results["settings"]["chat_format"]  # as equita wrote it before the template was recorded
    write(folder, results, samples)
    verification = verify_folder(folder, datasets=str(datasets))
    entry = verification["tasks"]["itap-at"]
    assert entry["status"] == "not verifiable" and verification["verified"] is False
    assert entry["problems"] == ["prompts: the run recorded no chat format (settings.chat_format): results of an older equita, "
                                 "or a backend that does not say how it renders a chat prompt; they cannot be compared with the task's"]  # fmt: skip
    assert verification["tasks"]["jobs"]["status"] == "verified"  # raw text needs no template


def test_a_chat_template_that_is_not_its_sha256_is_not_rendered(genuine, datasets, tmp_path):
    folder = tmp_path / "template"
    shutil.copytree(genuine, folder)
    results, samples = read(folder)
    results["settings"]["chat_format"]["template"] += "{{ 'Suggerimento' }}"
    write(folder, results, samples)
    entry = verify_folder(folder, datasets=str(datasets))["tasks"]["itap-at"]
    assert entry["status"] == "not verifiable"
    assert entry["problems"][0].startswith("prompts: settings.chat_format.template is not the text its template_sha256 names")


def test_a_chat_template_that_would_run_for_hours_is_stopped(genuine, datasets, tmp_path):
    # A results file's template is someone else's code: the sandbox keeps it from the machine, the time limit from the leaderboard's clock.
    folder = tmp_path / "slow"
    shutil.copytree(genuine, folder)
    results, samples = read(folder)
    template = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    results["settings"]["chat_format"].update(template=template, template_sha256=hashlib.sha256(template.encode()).hexdigest())
    write(folder, results, samples)
    entry = verify_folder(folder, datasets=str(datasets))["tasks"]["itap-at"]
    assert entry["status"] == "not verifiable"
    assert entry["problems"] == ["prompts: the recorded chat template cannot be rendered (TimeoutError: took over 0.5 s); they cannot be compared with the task's"]


@pytest.mark.parametrize("with_tokenizer", [False, True], ids=["server without --tokenizer", "server with --tokenizer"])
def test_an_honest_server_run_verifies_and_a_hinted_one_does_not(tiny_model_dir, datasets, tmp_path, with_tokenizer):
    from test_probes_verify import SERVED, chat_server

    out = tmp_path / "server"
    with chat_server() as url:  # ItaP-AT only: generation is all that server answers
        run(RunOptions(model=SERVED, out=out, tasks="itap-at", datasets=str(datasets), limit=LIMIT, server=url,
                       tokenizer=str(tiny_model_dir) if with_tokenizer else None, concurrency=2), log=lambda m: None)  # fmt: skip
    results, samples = read(out)
    prompt = first(samples, "itap-at")["prompt"]
    # Without a tokenizer the prompt is the messages sent, as JSON: the row's newline is escaped in it.
    assert prompt.startswith('{"messages"') != with_tokenizer and ("\\n" in prompt) != with_tokenizer
    assert results["settings"]["chat_format"]["format"] == ("chat_template" if with_tokenizer else "messages")
    verification = verify_folder(out, datasets=str(datasets))
    assert {name: e["status"] for name, e in verification["tasks"].items()} == {"itap-at": "verified"}, verification
    rig_prompts(out, datasets)
    entry = verify_folder(out, datasets=str(datasets))["tasks"]["itap-at"]
    assert entry["status"] == "mismatch" and "Suggerimento" in entry["problems"][0], entry


# -- equita submit -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub(tmp_path_factory, datasets):
    """A loopback Hub holding Jobs, published as the maintainers do, and an empty results dataset."""
    with hub_server.running(tmp_path_factory.mktemp("hf-home"), "hf_test_token_verify") as (state, env):
        python(env, f"from equita.runners.hub.publish import publish_dataset; publish_dataset({str(datasets / 'jobs')!r}, 'equita-test/jobs', {jobs_version!r})")
        state.create_repo("dataset", "equita-test/results")
        yield state, env


def python(env, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_submit_refuses_a_tampered_folder_and_uploads_the_samples_of_a_genuine_one(hub, genuine, tmp_path):
    state, env = hub
    repo = state.repos[("dataset", "equita-test/results")]
    # Jobs only (the Hub holds only its dataset): the run's folder without the ItaP-AT task.
    results, samples = read(genuine)
    del results["tasks"]["itap-at"]
    results["settings"]["tasks"] = ["jobs"]
    samples = [s for s in samples if s["task"] == "jobs"]
    tampered = json.loads(json.dumps(results))
    original = tampered["tasks"]["jobs"]["results"]["bias_score"]
    tampered["tasks"]["jobs"]["results"]["bias_score"] = 0.875
    unverifiable = json.loads(json.dumps(results))
    unverifiable["tasks"]["jobs"]["metric"]["options"]["seed"] = 1
    for name, content in (("genuine", results), ("tampered", tampered), ("unverifiable", unverifiable)):
        (tmp_path / name).mkdir()
        write(tmp_path / name, content, samples)
    # Both submissions in one process (the command line around submit_results is test_publish's).
    outcome = python(env, f"""
from equita.runners.hub.publish import PublishError, submit_results

try:
    submit_results({str(tmp_path / "tampered")!r}, "equita-test/results", datasets_org="equita-test", log=lambda m: None)
except PublishError as error:
    print("refused:", error)
print("opened:", submit_results({str(tmp_path / "genuine")!r}, "equita-test/results", datasets_org="equita-test", log=lambda m: None))
submit_results({str(tmp_path / "unverifiable")!r}, "equita-test/results", datasets_org="equita-test", log=lambda m: print("log:", m))
""")
    lines = outcome.splitlines()
    refused, opened = next(x for x in lines if x.startswith("refused:")), next(x for x in lines if x.startswith("opened:"))
    logged = [x for x in lines if x.startswith("log:")]
    assert refused.startswith(f"refused: {tmp_path / 'tampered'}: task jobs does not verify: results.bias_score: 0.875 recorded, {json.dumps(original)} recomputed")
    assert opened.startswith("opened: ['http") and len(repo.pulls) == 2  # the tampered folder opened nothing
    assert logged[0] == "log: jobs: not verifiable here (metric options differ from this equita's jobs: seed 1 recorded, 0 here); submitted, recorded as not verifiable"
    slug = results["model"]["id"]  # the model folder's name: letters, digits and "-", its own file name
    files = repo.files(repo.pulls[0]["head"])  # the record and its samples, in the same pull request commit
    record = json.loads(files[f"jobs/v{jobs_version}/{slug}.json"])
    assert record["verification"] == {"equita": "0.2.0", "tasks": {"jobs": "verified"}}
    uploaded = files[f"jobs/v{jobs_version}/{slug}.samples.jsonl"]
    assert [json.loads(line) for line in uploaded.decode().splitlines()] == samples
    assert record["samples"] == {"file": f"{slug}.samples.jsonl", "sha256": hashlib.sha256(uploaded).hexdigest()}
    unverified = json.loads(repo.files(repo.pulls[1]["head"])[f"jobs/v{jobs_version}/{slug}.json"])
    assert unverified["verification"] == {"equita": "0.2.0", "tasks": {"jobs": "not verifiable"}}
