"""results.json is untrusted input: to `equita report` and `equita submit` it is data, checked
field by field, and no name read from it becomes a path unchecked (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from equita.builders.common import path_part
from equita.runners.hub import publish
from equita.runners.results import report
from equita.runners.results import contract as results_contract
from equita.runners.results.contract import ResultsError, load_results
from equita.runners.run import strict


def _results() -> dict:
    task = {
        "description": "Jobs", "dataset": {"id": "jobs", "repo": "x", "location": "local", "config": "sentences", "split": "test", "version": "2.0.0", "revision": "r"},
        "request": {"type": "Loglikelihood"}, "prompts_sha256": "p", "n": 36, "metric": {"name": "jobs_bias", "module_sha256": "m", "options": {}},
        "results": {"bias_score": 0.5, "ci_low": 0.25, "ci_high": 0.75, "mean_log_ratio": 0.0, "log_ratio_ci_low": None, "log_ratio_ci_high": None,
                    "n": 6, "n_sentences": 144, "ties": 0, "groups": {}, "per_job": []},
        "timings": {"requests": 36, "cached": 0, "computed": 36, "inference_s": 1.0, "requests_per_s": 36.0, "metric_s": 0.1},
    }  # fmt: skip
    return {"schema": "equita.results/1", "created": "2026-12-01T00:00:00+00:00", "equita": {"version": "0.2.0"},
            "model": {"id": "smollm2", "source": "embedded", "revision": "a" * 64, "dtype": "float32", "device": "cpu", "chat_template": True},
            "settings": {"tasks": ["jobs"], "limit": 6, "batch_size": 16}, "tasks": {"jobs": task}, "timings": {}}  # fmt: skip


def _rename_task(results, name):
    results["tasks"] = {name: results["tasks"]["jobs"]}


def _set(path, value):
    def change(results):
        target = results
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


# (case, change to a valid results.json or raw bytes, message the report gives)
BAD = [
    ("row count not a number", _set(["tasks", "jobs", "rows_in_dataset"], "all"), "tasks.jobs.rows_in_dataset: 'all' is not a row count"),
    ("row count below n", _set(["tasks", "jobs", "rows_in_dataset"], 3), "tasks.jobs.rows_in_dataset: 3 is not a row count at least n"),
    ("task name climbs out", lambda r: _rename_task(r, "../../outside"), "task name '../../outside' cannot name a file"),
    ("task name is absolute", lambda r: _rename_task(r, "/tmp/evil"), "task name '/tmp/evil' cannot name a file"),
    ("task name is a drive path", lambda r: _rename_task(r, "C:evil"), "task name 'C:evil' cannot name a file"),
    ("a score that is a string", _set(["tasks", "jobs", "results", "bias_score"], "0.5"), "tasks.jobs.results.bias_score: expected a finite number or null, got '0.5'"),
    ("a boolean count", _set(["tasks", "jobs", "results", "n"], True), "tasks.jobs.results.n: expected a finite number or null, got True"),
    ("groups not an object", _set(["tasks", "jobs", "results", "groups"], [1]), "tasks.jobs.results.groups: expected an object"),
    ("warnings not strings", _set(["tasks", "jobs", "results", "warnings"], [1]), "tasks.jobs.results.warnings: expected a list of strings"),
    ("model without a revision", lambda r: r["model"].pop("revision"), "model: missing 'revision'"),
    ("not UTF-8", b"\xff\xfe{}", "not UTF-8 text"),
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "nested too deeply to be a results file"),
]  # fmt: skip


@pytest.mark.parametrize("case, change, message", BAD, ids=[b[0] for b in BAD])
def test_report_refuses_a_bad_results_file_naming_the_field(tmp_path, case, change, message):
    folder = tmp_path / "run"
    folder.mkdir()
    if isinstance(change, bytes):
        (folder / "results.json").write_bytes(change)
    else:
        results = _results()
        change(results)
        (folder / "results.json").write_text(json.dumps(results))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(ResultsError) as error:
        report.write_report([load_results(folder)], tmp_path / "report")
    assert message in str(error.value) and "\n" not in str(error.value)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written anywhere


def test_text_from_a_results_file_is_escaped_in_the_report(tmp_path):
    results = _results()
    results["model"]["id"] = "evil/<img src=x onerror=alert(1)> **x** [link](http://e) | cell"
    results["tasks"]["jobs"]["description"] = "<script>steal()</script>"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(json.dumps(results))
    text = report.write_report([load_results(tmp_path / "run")], tmp_path / "report").read_text()
    assert "<img" not in text and "<script>" not in text and "&lt;script&gt;" in text
    assert "\\[link\\]\\(http://e\\)" in text and "\\| cell" in text and "\\*\\*x\\*\\*" in text


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "a\\b", "/abs", "nul\x00", "tab\there", 3, None])
def test_path_part_refuses_what_is_not_one_name(name):
    with pytest.raises(ValueError, match="cannot name a file"):
        path_part(name, "name")


@pytest.mark.parametrize("name", ["itap-at", "gfg-detection-neogate", "smollm2", "model%2Fname", "v2.0.0"])
def test_path_part_keeps_ordinary_names(name):
    assert path_part(name, "name") == name


def test_model_file_names_are_one_to_one():
    names = ["org/name", "org__name", "org_name", "org%2Fname", "smollm2"]
    slugs = [publish._slug(n) for n in names]
    assert len(set(slugs)) == len(names) and all("/" not in s for s in slugs)


SUBMIT = [
    ("unknown dataset id", _set(["tasks", "jobs", "dataset", "id"], "../../.eval_results"), "tasks.jobs.dataset.id '../../.eval_results' is not an equita dataset"),
    ("version with a path", _set(["tasks", "jobs", "dataset", "version"], "2.0.0/../../x"), "tasks.jobs.dataset.version '2.0.0/../../x' is not a version X.Y.Z"),
    ("headline not a number", _set(["tasks", "jobs", "results", "bias_score"], None), "tasks.jobs.results.bias_score is None, not a number"),
]  # fmt: skip


@pytest.mark.parametrize("case, change, message", SUBMIT, ids=[s[0] for s in SUBMIT])
def test_submit_checks_every_field_that_becomes_a_repository_path(tmp_path, monkeypatch, case, change, message):
    results = _results()
    change(results)
    (tmp_path / "results.json").write_text(json.dumps(results))
    monkeypatch.setattr("huggingface_hub.HfApi", lambda *a, **k: pytest.fail("the Hub was contacted before the file was checked"))
    with pytest.raises(publish.PublishError, match=None) as error:
        publish.submit_results(tmp_path, "equita-test/results")
    assert message in str(error.value)


def test_results_files_are_strict_json():
    value = strict({"mean_log_ratio": float("inf"), "groups": {"1": {"x": float("-inf"), "y": float("nan")}}, "n": [1, 2.5]})
    assert value == {"mean_log_ratio": None, "groups": {"1": {"x": None, "y": None}}, "n": [1, 2.5]}
    json.dumps(value, allow_nan=False)  # raises on any non-finite number left


def test_nothing_submitted_names_a_local_folder(tmp_path, monkeypatch):
    from equita.runners.backends.sources import cache_root, shareable

    home = Path.home()
    (tmp_path / "mine").mkdir()
    cases = [
        (str(cache_root() / "datasets" / "itap_at-2.0.0"), "cache:datasets/itap_at-2.0.0"),
        (str(tmp_path / "mine"), "local:mine"),
        (str(home / "models" / "x.gguf"), "local:x.gguf"),
        ("equita/itap_at", "equita/itap_at"),  # a Hub id stays
    ]
    for path, expected in cases:
        assert shareable(path) == expected
    # Results written before paths were recorded shareably are cleaned when submitted.
    old = {"model": {"id": str(home / "m.gguf"), "path": str(cache_root() / "models" / "m-1")},
           "tasks": {"jobs": {"dataset": {"repo": str(home / "builds" / "jobs")}, "not_computed": f"cannot read {home}/x.bin"}}}  # fmt: skip
    assert publish._without_local_paths(old) == {
        "model": {"id": "local:m.gguf", "path": "cache:models/m-1"},
        "tasks": {"jobs": {"dataset": {"repo": "local:jobs"}, "not_computed": "cannot read ~/x.bin"}},
    }


@pytest.mark.parametrize(
    "limit, n, rows_in_dataset, quick_look",
    [(6, 36, 1026, True), (5000, 1026, 1026, False), (171, 1026, 1026, False), (None, 1026, 1026, False), (6, 36, None, True)],
)  # fmt: skip
def test_only_a_limit_that_cut_a_task_is_a_quick_look(tmp_path, limit, n, rows_in_dataset, quick_look):
    # rows_in_dataset None: a results file from before it was recorded; a limit then counts as a cut.
    results = _results()
    results["settings"]["limit"] = limit
    results["tasks"]["jobs"]["n"] = n
    if rows_in_dataset is not None:
        results["tasks"]["jobs"]["rows_in_dataset"] = rows_in_dataset
    assert results_contract.validate_results(results) == []
    text = report.write_report([results], tmp_path).read_text()
    assert ("Quick look" in text) == quick_look
    assert ("every row was scored" in text) == (limit is not None and not quick_look)
