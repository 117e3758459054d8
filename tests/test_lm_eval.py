"""equita inside lm-evaluation-harness and back (issue 29): the real lm-eval 0.4.13 runs the
exported tasks on SmolLM2, and its output becomes an equita results folder.

One lm-eval run (the bias group, on the rows `equita run --limit 3` takes) and one equita run on
the same rows are shared by the tests; the refusals edit copies of lm-eval's output."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from equita.runners.lmeval.export import export, lm_eval_name
from equita.runners.results.verify import verify_folder
from equita.runners.run import RunOptions, limited, run
from equita.runners.tasks import EVAL_TASKS, TASK_GROUPS
from test_probes import invoke, tree

LIMIT = 2
BIAS = list(TASK_GROUPS["bias"])
# lm-eval scores a context and its continuation as one sequence, equita tokenises them apart and
# batches other rows beside them: float32 sums of 1e-5 to 2e-4 apart (measured: Jobs 2.8e-5,
# the chat-rendered ItaP-AT contexts 2.0e-4).
LOGPROB_TOLERANCE = {"jobs": 1e-4, "itap-at-logprob": 1e-3}


@pytest.fixture(scope="module")
def all_datasets(tmp_path_factory, datasets) -> Path:
    """The session's ItaP-AT and Jobs builds, and a GFG build: every task can be exported."""
    from conftest import UPSTREAM
    from equita.builders import gfg

    folder = tmp_path_factory.mktemp("datasets")
    for name in ("itap_at", "jobs"):
        (folder / name).symlink_to((datasets / name).resolve())
    gfg.build(folder / "gfg", source_dir=UPSTREAM)
    return folder


@pytest.fixture(scope="module")
def exported(tmp_path_factory, all_datasets) -> Path:
    folder = tmp_path_factory.mktemp("lm_eval") / "tasks"
    export(folder, list(EVAL_TASKS), datasets=str(all_datasets), limit=LIMIT, log=lambda message: None)
    return folder


@pytest.fixture(scope="module")
def lm_eval_output(exported, smollm2, tmp_path_factory) -> Path:
    """lm-eval's own command line, in this process: `lm_eval ... --tasks equita_bias --apply_chat_template`."""
    from lm_eval._cli import HarnessCLI

    from equita.runners.backends.sources import convert_gguf, embedded_gguf

    output = tmp_path_factory.mktemp("lm_eval") / "output"
    argv = ["lm_eval", "--model", "hf", "--model_args", f"pretrained={convert_gguf(embedded_gguf('smollm2'))},dtype=float32", "--device", "cpu",
            "--batch_size", "4", "--include_path", str(exported), "--tasks", "equita_bias", "--apply_chat_template", "--log_samples",
            "--output_path", str(output), "--samples", str(exported / f"samples-limit-{LIMIT}.json")]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", argv)
        cli = HarnessCLI()
        cli.execute(cli.parse_args())
    return output


@pytest.fixture(scope="module")
def equita_run(tmp_path_factory, datasets, smollm2) -> Path:
    out = tmp_path_factory.mktemp("equita") / "run"
    run(RunOptions(model="smollm2", out=out, tasks="bias", datasets=str(datasets), limit=LIMIT, batch_size=4), log=lambda message: None)
    return out


def _lm_eval_samples(output: Path, task: str) -> list[dict]:
    (path,) = output.glob(f"*/samples_{lm_eval_name(task)}_[0-9]*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- export ---------------------------------------------------------------------------------------


def test_export_writes_a_yaml_per_task_a_group_per_benchmark_and_the_rows_of_a_limit(exported, all_datasets):
    from equita.runners import data

    names = sorted(path.name for path in exported.iterdir())
    assert names == sorted([f"{lm_eval_name(task)}.yaml" for task in EVAL_TASKS] + ["equita_bias.yaml", "equita_gfg.yaml", "utils.py", f"samples-limit-{LIMIT}.json"])
    groups = {name: yaml.safe_load((exported / f"{name}.yaml").read_text()) for name in ("equita_bias", "equita_gfg")}
    assert groups["equita_bias"]["task"] == [lm_eval_name(task) for task in BIAS]
    assert groups["equita_gfg"]["task"] == [lm_eval_name(task) for task in TASK_GROUPS["gfg"]]
    text = (exported / "equita_jobs.yaml").read_text()
    assert text.splitlines()[1] == "class: !function utils.EquitaTask"  # lm-eval builds equita's own task class
    config = yaml.safe_load(text.replace("!function ", ""))
    meta = config["metadata"]["equita"]
    assert (meta["task"], meta["request"], meta["dataset"]["version"], meta["dataset"]["location"]) == ("jobs", "Loglikelihood", EVAL_TASKS["jobs"].dataset.version, "local")
    assert config["dataset_path"] == str((all_datasets / "jobs").resolve()) and config["dataset_name"] == "sentences"
    # The rows `equita run --limit 3` takes, as lm-eval's --samples indices (its own --limit takes the first rows).
    chosen = json.loads((exported / f"samples-limit-{LIMIT}.json").read_text())
    for task in ("itap-at", "jobs"):
        spec = EVAL_TASKS[task]
        rows = data.load_rows(spec.config, spec.split, str(all_datasets / spec.dataset.id), "local", "")
        assert [rows[i]["id"] for i in chosen[lm_eval_name(task)]] == [row["id"] for row in limited(spec, rows, LIMIT)]


@pytest.mark.parametrize("arguments, message", [
    (["--tasks", "nope"], "unknown task 'nope'"),
    (["--datasets", "x", "--datasets-org", "equita"], "--datasets and --datasets-org: give one"),
    (["--datasets-org", "../up"], "not a Hub organisation name"),
    (["--bertscore-model", "/no/encoder"], "--bertscore-model needs --bertscore-layers N"),
])  # fmt: skip
def test_export_refuses_bad_arguments_in_one_line(tmp_path, monkeypatch, arguments, message):
    code, output = invoke(["export", "lm-eval", "--out", "tasks", *arguments], tmp_path, monkeypatch)
    assert code == 2 and message in output and len(output.strip().splitlines()) == 1, output
    assert not (tmp_path / "tasks").exists()


# -- the same numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize("task", BIAS)
def test_lm_eval_reads_equitas_prompts_and_gives_its_answers(task, lm_eval_output, equita_run):
    ours = {s["id"]: s for s in _read(equita_run / "samples.jsonl") if s["task"] == task}
    theirs = _lm_eval_samples(lm_eval_output, task)
    assert sorted(s["doc"]["id"] for s in theirs) == sorted(ours) and len(ours) == (LIMIT if task != "jobs" else 6 * LIMIT + 3)
    for sample in theirs:
        mine = ours[sample["doc"]["id"]]
        assert sample["arguments"]["gen_args_0"]["arg_0"] == mine["prompt"]  # byte-identical
        if "text" in mine["response"]:
            assert sample["filtered_resps"][0] == mine["response"]["text"]  # the same greedy answer
        else:
            differences = [abs(float(pair[0]) - logprob) for pair, logprob in zip(sample["filtered_resps"], mine["response"]["logprobs"])]
            assert max(differences) <= LOGPROB_TOLERANCE[task]


def test_lm_eval_reports_equitas_scores(lm_eval_output, equita_run):
    (path,) = lm_eval_output.glob("*/results_*.json")
    reported = json.loads(path.read_text())["results"]
    ours = json.loads((equita_run / "results.json").read_text())["tasks"]
    for task in BIAS:
        for key in ("bias_score", "ci_low", "ci_high"):
            assert reported[lm_eval_name(task)][f"{key},none"] == pytest.approx(ours[task]["results"][key], abs=1e-12), (task, key)


# -- import -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imported(lm_eval_output, datasets, tmp_path_factory) -> Path:
    from equita.runners.lmeval.importing import import_lm_eval

    out = tmp_path_factory.mktemp("imported") / "results"
    import_lm_eval(lm_eval_output, out, datasets=str(datasets), log=lambda message: None)
    return out


def test_an_imported_run_verifies_and_scores_as_equita_run_does(imported, equita_run, datasets):
    results = json.loads((imported / "results.json").read_text())
    ours = json.loads((equita_run / "results.json").read_text())
    assert list(results["tasks"]) == BIAS and results["settings"]["limit"] == LIMIT
    assert results["imported_from"]["tool"] == "lm-eval" and results["imported_from"]["version"] == "0.4.13"
    assert results["imported_from"]["model_args"]["pretrained"].startswith("cache:models/SmolLM2")  # no local path recorded
    assert results["model"]["revision"].startswith("unpinned-lm-eval:") and results["model"]["chat_template"] is True
    for task in ("itap-at", "itap-at-oneshot"):
        assert results["tasks"][task]["results"] == ours["tasks"][task]["results"]
        assert results["tasks"][task]["prompts_sha256"] == ours["tasks"][task]["prompts_sha256"]
    for task in ("itap-at-logprob", "jobs"):
        assert results["tasks"][task]["results"]["bias_score"] == pytest.approx(ours["tasks"][task]["results"]["bias_score"], abs=1e-3)
    from equita.runners.hub.publish import _without_local_paths
    from equita.runners.results.contract import validate_results

    assert validate_results(results) == [] and _without_local_paths(results) == results  # what `equita submit` checks and cleans
    checked = verify_folder(imported, datasets=str(datasets), log=lambda message: None)["tasks"]
    assert {name: entry["status"] for name, entry in checked.items()} == dict.fromkeys(BIAS, "verified"), checked


def test_an_imported_run_is_read_by_rescore_report_and_the_leaderboard(imported, equita_run, datasets, tmp_path, monkeypatch):
    code, output = invoke(["rescore", str(imported), "--out", "rescored", "--datasets", str(datasets)], tmp_path, monkeypatch)
    assert code == 0 and f"itap-at: labels changed: none of {LIMIT}" in output, output
    code, output = invoke(["report", str(imported), str(equita_run), "--out", "comparison"], tmp_path, monkeypatch)
    assert code == 0, output
    assert "@unpinned" in (tmp_path / "comparison" / "comparison.md").read_text()
    code, output = invoke(["leaderboard", str(imported), str(equita_run), "--out", "site"], tmp_path, monkeypatch)
    assert code == 0 and (tmp_path / "site" / "index.html").is_file(), output


def _copy(output: Path, tmp: Path) -> Path:
    copy = tmp / "output"
    shutil.copytree(output, copy)
    return copy


def _results(folder: Path) -> Path:
    (path,) = folder.glob("*/results_*.json")
    return path


def _edit_results(change):
    def edit(folder: Path):
        path = _results(folder)
        record = json.loads(path.read_text())
        change(record)
        path.write_text(json.dumps(record))

    return edit


def _edit_samples(task: str, change):
    def edit(folder: Path):
        (path,) = folder.glob(f"*/samples_{lm_eval_name(task)}_[0-9]*.jsonl")
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(line) + "\n" for line in change(lines)))

    return edit


def _older_version(record):
    record["configs"]["equita_jobs"]["metadata"]["equita"]["dataset"]["version"] = "2.0.0"


def _no_samples(folder: Path):
    next(folder.glob("*/samples_equita_jobs_*.jsonl")).unlink()


def _first_rows(lines):
    # The first document only (n-samples edited to match): the rows of --limit 1, the others' are --limit 2.
    return lines[:1]


def _prompt_with_a_hint(lines):
    lines[0]["arguments"]["gen_args_0"]["arg_0"] += "Suggerimento: scegli lo stereotipo.\n"
    return lines


def _other_task_only(record):
    record["configs"] = {"arc_easy": {"task": "arc_easy", "metadata": {"version": 1}}}


def _second_run(folder: Path):
    path = _results(folder)
    shutil.copy(path, path.with_name("results_2099-01-01T00-00-00.json"))


REFUSED = [
    # (case, edit of lm-eval's output, message)
    ("another dataset version", _edit_results(_older_version), "exported for jobs/sentences version 2.0.0; this equita scores jobs/sentences version 3.0.0"),
    ("no --log_samples", _no_samples, "run lm_eval with --log_samples"),
    ("a profession's sentence left out", lambda folder: (_edit_samples("jobs", lambda lines: lines[1:])(folder),
                                                         _edit_results(lambda r: r["n-samples"]["equita_jobs"].update(effective=6 * LIMIT + 2))(folder)),
     "which are not the rows `equita run --limit` takes"),
    ("one task on other rows", lambda folder: (_edit_samples("itap-at", _first_rows)(folder),
                                               _edit_results(lambda r: r["n-samples"]["equita_itap_at"].update(effective=1))(folder)),
     "the tasks ran on different row selections (equita_itap_at: --limit 1, equita_itap_at_logprob: --limit 2"),
    ("a sample missing", _edit_samples("itap-at-oneshot", lambda lines: lines[1:]), "lm-eval scored 2 documents"),
    ("a prompt with a hint", _edit_samples("itap-at", _prompt_with_a_hint), "its prompt is not the one equita renders with lm-eval's recorded chat template"),
    ("a document edited", _edit_samples("jobs", lambda lines: [{**lines[0], "doc": {**lines[0]["doc"], "context": "x"}}, *lines[1:]]), "its doc differs from row"),
    ("an answer that is not text", _edit_samples("itap-at", lambda lines: [{**lines[0], "filtered_resps": [3]}, *lines[1:]]), "filtered_resps is not one generated text"),
    ("a log-likelihood that is not a number", _edit_samples("jobs", lambda lines: [{**lines[0], "filtered_resps": [["x", "False"]] * 4}, *lines[1:]]),
     "is not a log-likelihood"),
    ("no equita task", _edit_results(_other_task_only), "no equita task (arc_easy)"),
    ("a system instruction", _edit_results(lambda r: r.update(system_instruction="Sei un pirata.")), "ran with --system_instruction"),
    ("two runs in one folder", _second_run, "holds 2 lm-eval runs"),
]  # fmt: skip


@pytest.mark.parametrize("case, edit, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_an_output_that_cannot_be_imported_is_refused_with_the_reason(case, edit, message, lm_eval_output, datasets, tmp_path, monkeypatch):
    output = _copy(lm_eval_output, tmp_path)
    edit(output)
    before = tree(tmp_path)
    code, printed = invoke(["import", "lm-eval", str(output), "--out", "imported", "--datasets", str(datasets)], tmp_path, monkeypatch)
    assert code == 1 and message in " ".join(printed.split()), printed
    assert len(printed.strip().splitlines()) == 1, printed
    assert tree(tmp_path) == before  # nothing written, the output untouched
