"""`equita rescore`: a results folder scored again from its samples, without the model (issue 28).
Plumbing on the scripted fake model: the scores come from the metric modules, whatever answered."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from equita.builders import jobs
from equita.runners.results.verify import verify_folder
from equita.runners.run import RunOptions, run
from test_probes import invoke, tree


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, itap_dir) -> Path:
    folder = tmp_path_factory.mktemp("datasets")
    jobs.build(folder / "jobs")
    (folder / "itap_at").symlink_to(itap_dir)
    return folder


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
