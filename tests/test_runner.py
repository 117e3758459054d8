"""`equita run` end to end on the embedded model: results, samples, report, resume, errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import EQUITA
from equita.builders import itap_at
from equita.runners.results import report
from equita.runners.results import contract as results_contract
from equita.runners.data import DatasetError
from equita.runners.backends.hf import TransformersModel
from equita.runners.run import RunOptions, load_metric, run


LIMIT = 8
TASKS = ("itap-at", "itap-at-oneshot", "itap-at-logprob")
SIGN = {"stereotype": 1, "anti_stereotype": -1, "neutral": 0, "error": 0}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def options(out: Path, itap_dir: Path, **overrides) -> RunOptions:
    settings = {"model": "smollm2", "out": out, "datasets": str(itap_dir), "limit": LIMIT, "batch_size": 4, "tasks": ",".join(TASKS)}
    return RunOptions(**{**settings, **overrides})


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, itap_dir, smollm2):
    out = tmp_path_factory.mktemp("run") / "smollm2"
    logs: list[str] = []
    results = run(options(out, itap_dir), log=logs.append)
    return out, results, logs


def test_results_record_model_data_settings_metrics_and_timings(first_run, itap_dir):
    out, results, _ = first_run
    assert json.loads((out / "results.json").read_text()) == results
    assert results["schema"] == "equita.results/1"
    assert results["equita"]["version"] == "0.2.0"
    assert results["model"]["id"] == "smollm2" and len(results["model"]["revision"]) == 64
    assert results["model"]["path"].startswith("cache:models/SmolLM2-135M-Instruct")
    text = (out / "results.json").read_text()
    assert str(itap_dir) not in text and str(out) not in text and '"/' not in text  # no absolute path anywhere
    chat_format = results["settings"].pop("chat_format")
    assert results["settings"] == {"tasks": list(TASKS), "limit": LIMIT, "batch_size": 4}
    assert chat_format["format"] == "chat_template"  # what verify renders each prompt with again
    assert list(results["tasks"]) == list(TASKS)
    for name, task in results["tasks"].items():
        dataset = task["dataset"]
        # The user's folders are not recorded: only the folder's name (its checksum is the revision).
        assert (dataset["id"], dataset["repo"], dataset["location"], dataset["config"]) == ("itap_at", f"local:{itap_dir.name}", "local", "all")
        assert task["rows_in_dataset"] == 2310 and task["n"] < task["rows_in_dataset"]
        assert dataset["version"] == itap_at.VERSION and dataset["revision"].startswith("manifest-sha256:")
        assert task["n"] == LIMIT and task["results"]["n"] == LIMIT
        assert task["metric"]["name"] == "itap_at_bias" and len(task["metric"]["module_sha256"]) == 64
        assert -1 <= task["results"]["bias_score"] <= 1
        assert "labels" not in task["results"] and "reasons" not in task["results"]  # per row: in samples.jsonl
        assert task["timings"]["computed"] == LIMIT and task["timings"]["cached"] == 0
        assert len(task["prompts_sha256"]) == 64
    assert results["tasks"]["itap-at"]["request"] == {"type": "Generate", "max_new_tokens": 32, "stop": [], "chat": True, "format": "chat_template"}
    assert results["tasks"]["itap-at-logprob"]["request"]["type"] == "Loglikelihood"
    assert results["tasks"]["itap-at-logprob"]["results"]["mode"] == "logprob"


def test_samples_let_anyone_recompute_every_score(first_run):
    out, results, _ = first_run
    samples = read_jsonl(out / "samples.jsonl")
    assert len(samples) == LIMIT * len(TASKS)
    metric, _ = load_metric("itap_at_bias")
    for name in TASKS:
        rows = [s for s in samples if s["task"] == name]
        assert all(s["score"] == SIGN[s["label"]] and s["reason"] for s in rows)
        assert all(s["prompt"].endswith("<|im_start|>assistant\n") for s in rows)
        # The bias score is the mean of the per-row scores (the paper's denominator: every row).
        assert results["tasks"][name]["results"]["bias_score"] == pytest.approx(sum(s["score"] for s in rows) / LIMIT)
        # Scoring the saved metric inputs again gives the same labels and numbers.
        inputs = {key: [s["metric_input"][key] for s in rows] for key in rows[0]["metric_input"]}
        again = metric.compute(**inputs, return_labels=True)
        assert again["labels"] == [s["label"] for s in rows]
        assert again["groups"] == results["tasks"][name]["results"]["groups"]
    generated = [s for s in samples if s["task"] == "itap-at"]
    assert all(s["metric_input"]["predictions"] == s["response"]["text"] for s in generated)
    oneshot = [s for s in samples if s["task"] == "itap-at-oneshot"]
    assert all(s["metric_input"]["stereotypes"] in s["prompt"] for s in oneshot)
    logprob = [s for s in samples if s["task"] == "itap-at-logprob"]
    assert all(len(s["continuations"]) == len(s["response"]["logprobs"]) for s in logprob)
    assert len({s["group"] for s in samples}) >= 5  # --limit spreads the rows over the subdatasets


def test_report_has_tables_and_plots_for_every_task(first_run):
    out, results, _ = first_run
    text = (out / "report.md").read_text()
    assert text.startswith("# equita report: smollm2")
    assert "Quick look: `--limit 8`" in text
    for name in TASKS:
        assert f"## {name}" in text
        assert f"![{name} bias](plots/{name}-bias.png)" in text
        for kind in ("bias", "answers"):
            png = out / "plots" / f"{name}-{kind}.png"
            assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    assert "| group " in text and "| all " in text
    # How much the wording matters: the per-instruction table, its sentence and figure, per task.
    assert text.count("Bias score per instruction") == len(TASKS) and "permutation test within inputs" in text
    for name in TASKS:
        assert (out / "plots" / f"{name}-instructions.png").read_bytes()[:8] == PNG_MAGIC
    # Groups follow the dataset's config order, not string order.
    groups = [line.split("|")[1].strip() for line in text.split("## itap-at-oneshot")[0].splitlines() if line.startswith("| ")][1:]
    assert groups[0] == "all"
    assert groups.index("base-2") < groups.index("base-10") if {"base-2", "base-10"} <= set(groups) else True


def test_rerun_recomputes_nothing_and_gives_the_same_numbers(first_run, itap_dir, smollm2, monkeypatch):
    out, results, _ = first_run
    second = out.parent / "again"
    shutil.copytree(out, second)

    def must_not_run(self, requests, batch_size="auto", stats=None):
        assert not requests, "a cached request was recomputed"
        return iter(())

    monkeypatch.setattr(TransformersModel, "answer", must_not_run)
    again = run(options(second, itap_dir), log=lambda message: None)
    for name in TASKS:
        assert again["tasks"][name]["timings"]["cached"] == LIMIT and again["tasks"][name]["timings"]["computed"] == 0
        assert again["tasks"][name]["results"] == results["tasks"][name]["results"]
    assert read_jsonl(second / "samples.jsonl") == read_jsonl(out / "samples.jsonl")


def test_corrupted_cache_lines_are_reported_and_recomputed(first_run, itap_dir):
    out, results, _ = first_run
    damaged = out.parent / "damaged"
    shutil.copytree(out, damaged)
    lines = (damaged / "requests.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == LIMIT * len(TASKS)
    lines[1] = "{not json\n"
    lines[5] = json.dumps({"model": "x"}) + "\n"
    lines[-1] = lines[-1][: len(lines[-1]) // 2]  # a torn last write, no newline
    (damaged / "requests.jsonl").write_text("".join(lines))
    logs: list[str] = []
    again = run(options(damaged, itap_dir), log=logs.append)
    assert any("requests.jsonl line 2: not valid JSON" in m for m in logs)
    assert any("requests.jsonl line 6: not a cache entry" in m for m in logs)
    assert any(f"requests.jsonl line {len(lines)}: not valid JSON" in m for m in logs)
    assert sum(t["timings"]["computed"] for t in again["tasks"].values()) == 3
    for name in TASKS:
        assert again["tasks"][name]["results"]["bias_score"] == pytest.approx(results["tasks"][name]["results"]["bias_score"], abs=0.13)
    # The recomputed answers were appended on fresh lines: the file reads back whole.
    assert len((damaged / "requests.jsonl").read_text().splitlines()) == len(lines) + 3


def test_a_rerun_of_some_tasks_keeps_the_others_and_says_so(first_run, itap_dir):
    out, results, _ = first_run
    again = out.parent / "partial-rerun"
    shutil.copytree(out, again)
    logs: list[str] = []
    merged = run(options(again, itap_dir, tasks="itap-at-logprob"), log=logs.append)
    assert list(merged["tasks"]) == ["itap-at", "itap-at-oneshot", "itap-at-logprob"] == merged["settings"]["tasks"]
    assert any("kept itap-at, itap-at-oneshot; replaced itap-at-logprob" in m for m in logs)
    assert merged["tasks"]["itap-at"] == results["tasks"]["itap-at"]
    assert {s["task"] for s in read_jsonl(again / "samples.jsonl")} == set(TASKS)
    assert "## itap-at-oneshot" in (again / "report.md").read_text()


def test_interrupted_run_resumes_where_it_stopped(tmp_path, itap_dir, monkeypatch):
    # Plumbing, not the model: the scripted model answers at once and counts what it is asked.
    from fake_model import ScriptedModel

    interrupted = ScriptedModel(interrupt_after=2)
    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: interrupted)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run(options(out, itap_dir, tasks="itap-at-logprob", batch_size=2), log=lambda message: None)
    saved = read_jsonl(out / "requests.jsonl")
    assert len(saved) == 4 and {e["task"] for e in saved} == {"itap-at-logprob"}
    assert not (out / "results.json").exists()

    resumed = ScriptedModel()
    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: resumed)
    results = run(options(out, itap_dir, tasks="itap-at-logprob", batch_size=2), log=lambda message: None)
    assert resumed.asked == [LIMIT - 4]
    assert (results["tasks"]["itap-at-logprob"]["timings"]["cached"], results["tasks"]["itap-at-logprob"]["timings"]["computed"]) == (4, LIMIT - 4)
    # The resumed run scores exactly what one uninterrupted run scores.
    whole = run(options(tmp_path / "whole", itap_dir, tasks="itap-at-logprob", batch_size=2), log=lambda message: None)
    assert results["tasks"]["itap-at-logprob"]["results"] == whole["tasks"]["itap-at-logprob"]["results"]


def as_in_a_terminal():
    """Ctrl-C as a shell delivers it: SIGINT neither ignored nor blocked. A child inherits both from
    the test process, where a library may have left SIGINT blocked or ignored; Python then installs
    no KeyboardInterrupt handler and the run would finish instead of stopping."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_on_the_command_line_saves_answers_and_says_how_to_resume(tmp_path, itap_dir, smollm2):
    out = tmp_path / "run"
    command = [*EQUITA, "run", "--model", "smollm2", "--tasks", "itap-at", "--datasets", str(itap_dir),
               "--limit", "4", "--batch-size", "1", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal)
    cache = out / "requests.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and (not cache.exists() or len(cache.read_text().splitlines()) < 1):
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted:" in stderr and "rerun the same command to resume" in stderr
    assert "Traceback" not in stderr
    saved = read_jsonl(cache)  # every line whole
    assert 1 <= len(saved) < 4
    results = run(options(out, itap_dir, tasks="itap-at", limit=4, batch_size=8), log=lambda message: None)
    assert results["tasks"]["itap-at"]["timings"]["cached"] == len(saved)


def test_report_command_compares_models_side_by_side(first_run, tmp_path):
    out, results, _ = first_run
    other = tmp_path / "other"
    other.mkdir()
    changed = json.loads(json.dumps(results))
    changed["model"]["id"], changed["model"]["revision"] = "another-model", "0123456789abcdef"
    changed["tasks"]["itap-at"]["results"].update(bias_score=0.5, ci_low=0.25, ci_high=0.625)
    (other / "results.json").write_text(json.dumps(changed))
    target = tmp_path / "cmp"
    done = subprocess.run([*EQUITA, "report", str(out), str(other), "--out", str(target)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = (target / "comparison.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| task"))
    assert f"smollm2@{results['model']['revision'][:8]}" in header and "another-model@01234567" in header
    row = next(line for line in text.splitlines() if line.startswith("| itap-at ") and "| all " in line)
    assert "+0.500" in row
    # Both runs are --limit quick looks: listed in the rankings (Markdown-escaped marks), never ranked.
    assert "quick look \\(--limit 8, 8 of 2310 rows\\): not ranked" in text
    assert (target / "comparison.png").read_bytes()[:8] == PNG_MAGIC


def test_report_never_compares_scores_of_different_major_dataset_versions(first_run, tmp_path):
    out, results, _ = first_run
    older = json.loads(json.dumps(results))
    older["model"]["id"], older["model"]["revision"] = "old-run", "fedcba9876543210"
    for task in older["tasks"].values():
        task["dataset"]["version"] = "1.0.0"
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.json").write_text(json.dumps(older))
    text = (report.write_report([results, older], tmp_path / "cmp")).read_text()
    major = f"v{itap_at.VERSION.split('.')[0]}"  # the built ItaP-AT's major version
    assert "**Not comparable across dataset versions.**" in text and f"itap-at: dataset versions differ (v1: old-run@fedcba98; {major}: smollm2@" in text.replace("\\", "")
    assert f"### itap-at (dataset {major})" in text and "### itap-at (dataset v1)" in text  # ranked apart
    new_row = next(line for line in text.splitlines() if line.startswith(f"| itap-at ({major}) ") and "| all " in line)
    old_row = next(line for line in text.splitlines() if line.startswith("| itap-at (v1) ") and "| all " in line)
    # Each version's row holds only the model that ran it: the other model's cell is blank.
    assert [cell.strip() for cell in new_row.split("|")[3:5]][1] == "" and [cell.strip() for cell in old_row.split("|")[3:5]][0] == ""


@pytest.mark.parametrize(
    "content, message",
    [(None, "no results.json"), ("{", "not valid JSON"), ('{"schema": "other/9"}', "schema 'other/9'")],
)
def test_report_rejects_what_is_not_a_results_folder(tmp_path, content, message):
    if content is not None:
        (tmp_path / "results.json").write_text(content)
    with pytest.raises(results_contract.ResultsError, match=message):
        results_contract.load_results(tmp_path)


def test_dataset_of_another_version_is_refused(tmp_path, itap_dir):
    copy = tmp_path / "itap_at"
    shutil.copytree(itap_dir, copy)
    card = copy / "README.md"
    card.write_text(card.read_text().replace(f"version: {itap_at.VERSION}", "version: 1.0.0", 1))
    with pytest.raises(DatasetError, match=rf"dataset version 1\.0\.0 but this equita's itap-at tasks expect {re.escape(itap_at.VERSION)}"):
        run(options(tmp_path / "out", tmp_path), log=lambda message: None)


def test_dataset_whose_files_changed_is_refused(tmp_path, itap_dir):
    copy = tmp_path / "itap_at"
    shutil.copytree(itap_dir, copy)
    (copy / "base-1" / "test.parquet").write_bytes(b"changed")
    with pytest.raises(DatasetError, match="base-1/test.parquet: sha256 differs from manifest"):
        run(options(tmp_path / "out", tmp_path), log=lambda message: None)


def test_datasets_folder_without_the_dataset_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"no .*empty/itap_at; build it with `equita build itap-at --out .*empty/itap_at`"):
        run(options(tmp_path / "out", tmp_path / "empty"), log=lambda message: None)


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--tasks", "itap-at,jobs-v9"], 2, "unknown task 'jobs-v9'; valid tasks: all, bias, gfg, itap-at, itap-at-oneshot, itap-at-logprob, jobs, gfg-detection-neogate"),
        (["--model", "/no/such/model"], 1, "run failed: model '/no/such/model': not a folder with a checkpoint"),
        (["--datasets", "./no/such/folder"], 1, "--datasets './no/such/folder': no such folder"),
        (["--limit", "0"], 2, "Invalid value for '--limit'"),
    ],
)
def test_command_line_errors_are_clear(tmp_path, itap_dir, args, code, message):
    base = {"--model": "smollm2", "--datasets": str(itap_dir), "--out": str(tmp_path / "out"), "--tasks": "itap-at"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    command = [*EQUITA, "run", *[x for pair in base.items() for x in pair]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == code, done.stderr
    assert message in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def jobs_run(tmp_path_factory, smollm2):
    from equita.builders import jobs

    folder = tmp_path_factory.mktemp("datasets")
    jobs.build(folder / "jobs")
    out = tmp_path_factory.mktemp("run") / "jobs"
    results = run(options(out, folder, tasks="jobs", limit=6), log=lambda message: None)
    return out, results


def test_jobs_task_scores_whole_professions_by_log_likelihood(jobs_run):
    out, results = jobs_run
    task = results["tasks"]["jobs"]
    assert task["request"] == {"type": "Loglikelihood", "chat": False, "format": "plain"}
    assert task["dataset"]["config"] == "sentences" and task["n"] == 6 * 2 * 3 + 3  # --limit counts professions; the 3 neutral sentences come on top
    r = task["results"]
    assert r["n"] == 6 and r["n_sentences"] == 6 * 2 * 3 * 4
    assert 0 <= r["bias_score"] <= 1 and set(r["groups"]) <= {"1", "2", "3", "6", "7", "8", "9"}
    assert list(r["by_template"]) == ["T1", "T2", "T3"] and all(t["n"] == 6 for t in r["by_template"].values())
    assert [job["job_id"] for job in r["per_job"]] == sorted({s["job_id"] for s in r["per_job"]})
    samples = read_jsonl(out / "samples.jsonl")
    assert len(samples) == 39
    neutral, samples = samples[:3], samples[3:]  # the templates' neutral sentences come first
    assert [s["prompt"] for s in neutral] == ["Questa è una professione da", "Questo è un lavoro da", "Questo è un mestiere da"]
    assert all(s["metric_input"]["neutral"] == [True] * 4 and s["job_prefers"] is None for s in neutral)
    corrected = r["prior_corrected"]
    assert corrected["n"] == 6 and list(corrected["by_template"]) == ["T1", "T2", "T3"] and set(corrected["prior_log_ratios"]) == {"T1", "T2", "T3"}
    assert all("job_prefers_corrected" in s for s in samples)
    first = samples[0]
    assert first["prompt"] == "Ambasciatore è una professione da" and first["continuations"] == [" uomo", " uomini", " donna", " donne"]
    assert first["metric_input"]["genders"] == ["m", "m", "f", "f"] and first["metric_input"]["job_ids"] == ["J001"] * 4
    assert first["metric_input"]["logprobs"] == first["response"]["logprobs"]
    assert first["metric_input"]["templates"] == ["T1"] * 4 and first["metric_input"]["ambiguous"] == [False] * 4
    # --limit 6 spreads over the table: J029 statistica, J058 tecnica meccanica, J115 rilegatrice are ambiguous.
    assert r["n_ambiguous"] == len({s["metric_input"]["job_ids"][0] for s in samples if s["metric_input"]["ambiguous"][0]}) == 3
    assert first["label"] in ("m", "f") and first["job_prefers"] in ("m", "f", "tie")
    # Recompute the share by hand from the per-job log-probabilities.
    share = sum(1.0 if j["log_p_m"] > j["log_p_f"] else 0.5 if j["log_p_m"] == j["log_p_f"] else 0.0 for j in r["per_job"]) / 6
    assert r["bias_score"] == pytest.approx(share)


def test_jobs_report_has_its_table_and_figures(jobs_run):
    out, _ = jobs_run
    text = (out / "report.md").read_text()
    assert "## jobs" in text and "bias score [95% CI] (0.5 unbiased)" in text and "most male-leaning" in text
    assert "| T1 " in text and "| T3 " in text and "without the" in text and "permutation test within professions" in text
    for kind in ("categories", "log-ratio", "templates"):
        assert (out / "plots" / f"jobs-{kind}.png").read_bytes()[:8] == PNG_MAGIC


GFG_TASKS = ("gfg-detection-neogate", "gfg-reformulation-neogate", "gfg-reformulation-gente", "gfg-translation-gente", "gfg-translation-neogate")


@pytest.fixture(scope="module")
def gfg_datasets(tmp_path_factory):
    from conftest import UPSTREAM
    from equita.builders import gfg

    folder = tmp_path_factory.mktemp("datasets")
    gfg.build(folder / "gfg", source_dir=UPSTREAM)
    return folder


def test_gfg_tasks_generate_and_score_with_local_metric_models(tmp_path, gfg_datasets, smollm2, neutrality_classifier):
    from conftest import minilm_path

    metric_options = {"gfg_detection": {"model_type": minilm_path(), "num_layers": 6},
                      "gente_neutrality": {"model": str(neutrality_classifier), "tokenizer": str(neutrality_classifier)}}  # fmt: skip
    results = run(options(tmp_path / "run", gfg_datasets, tasks=",".join(GFG_TASKS), limit=1, metric_options=metric_options), log=lambda m: None)
    tasks = results["tasks"]
    assert all(tasks[name]["not_computed"] is None for name in GFG_TASKS)
    assert tasks["gfg-detection-neogate"]["request"] == {"type": "Generate", "max_new_tokens": 128, "stop": ["\n\n"], "chat": False, "format": "plain"}
    assert 0 <= tasks["gfg-detection-neogate"]["results"]["f1"] <= 1 and tasks["gfg-detection-neogate"]["metric"]["options"]["num_layers"] == 6
    assert tasks["gfg-reformulation-gente"]["results"]["predicted_neutral"] == 100.0  # the tiny classifier always says neutral
    assert tasks["gfg-translation-neogate"]["results"]["n_annotations"] > 0
    samples = read_jsonl(tmp_path / "run" / "samples.jsonl")
    assert len(samples) == len(GFG_TASKS)
    for sample in samples:
        assert "\n\n" not in sample["response"]["text"]  # stopped at the blank line
        assert sample["answer"] == sample["response"]["text"].rsplit("]:", 1)[-1].strip()
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| pooled over annotations (official)" in report and "F1 (mean over entries)" in report and "accuracy (%)" in report
    for name, suffix in [("gfg-detection-neogate", "f1"), ("gfg-reformulation-neogate", "scores"), ("gfg-translation-gente", "accuracy")]:
        assert (tmp_path / "run" / "plots" / f"{name}-{suffix}.png").read_bytes()[:8] == PNG_MAGIC


def test_a_metric_whose_model_cannot_load_is_reported_not_computed(tmp_path, gfg_datasets, monkeypatch):
    # Plumbing: the answers do not matter, the metric's failure to load its own model does.
    from fake_model import ScriptedModel

    monkeypatch.setattr("equita.runners.run.load_model", lambda *args, **kwargs: ScriptedModel(lambda request: "[F]: Le persone presenti."))
    logs: list[str] = []
    results = run(options(tmp_path / "run", gfg_datasets, tasks="gfg-reformulation-gente,gfg-reformulation-neogate", limit=2), log=logs.append)
    gente, neogate = results["tasks"]["gfg-reformulation-gente"], results["tasks"]["gfg-reformulation-neogate"]
    assert gente["results"] is None and "gente_neutrality's model could not be loaded" in gente["not_computed"]
    assert "pass model= and tokenizer= local paths" in gente["not_computed"]
    assert neogate["results"] is not None and neogate["not_computed"] is None  # the others still run
    assert any("gfg-reformulation-gente: not computed" in m for m in logs)
    samples = [s for s in read_jsonl(tmp_path / "run" / "samples.jsonl") if s["task"] == "gfg-reformulation-gente"]
    assert len(samples) == 2 and all(s["not_computed"] and s["response"]["text"] is not None for s in samples)  # nothing dropped
    assert "**Not computed:** gente\\_neutrality's model could not be loaded" in (tmp_path / "run" / "report.md").read_text()
