"""The red-team probes of 2026-12-02 on the leaderboard, the report and the comparison, at the
command line: crafted results (D3, D14, D33), samples without newlines (D20), raw HTML (D21) and
`--out` placements that would delete what the site did not write (D1).

One table per command area. Each row gives the exit code, the one-line message (a substring) and
checks that nothing outside the command's target changed. In the leaderboard a bad results folder,
or a bad record of an open pull request on the Hub, is named with its reason and left out; the
other results are built. The report and the comparison refuse the same folder in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hub_server
from conftest import EQUITA
from test_probes import invoke, tree
from test_untrusted_results import _results as jobs_results
from equita.runners.results.contract import MAX_SAMPLE_LINE_BYTES

HUGE = "@@HUGE@@"  # written as a 5,000-digit integer (json.dumps cannot write one)
PAYLOAD = '<script>alert(1)</script><img src=x onerror=alert(2)>'


def _part(score: float) -> dict:
    """One scored part of an ItaP-AT result (the result itself, a group, an instruction)."""
    return {"bias_score": score, "ci_low": score - 0.1, "ci_high": score + 0.1, "p_stereotype": 0.5, "p_anti_stereotype": 0.3, "p_neutral": 0.1,
            "p_error": 0.1, "n": 10, "n_clusters": 2, "interpretable": True, "warnings": []}  # fmt: skip


def valid() -> dict:
    """A results.json that follows the schema: a Jobs task and an ItaP-AT task with one subdataset."""
    results = jobs_results()
    jobs = results["tasks"]["jobs"]
    spread = {"min": 0.1, "max": 0.3, "range": 0.2, "sd": 0.1, "n": 2, "p_value": 0.5}
    group = {**_part(0.2), "instructions": {"1": _part(0.1), "2": _part(0.3)}, "instruction_spread": spread}
    results["tasks"]["itap-at"] = {
        **jobs, "description": "ItaP-AT", "dataset": {**jobs["dataset"], "id": "itap_at", "config": "all", "version": "3.0.0"},
        "request": {"type": "Generate", "format": "chat_template"}, "n": 10, "rows_in_dataset": 10,
        "metric": {"name": "itap_at_bias", "module_sha256": "m", "options": {}}, "results": {**_part(0.2), "groups": {"base-1": group}},
    }  # fmt: skip
    results["settings"]["tasks"] = ["jobs", "itap-at"]
    return results


def write(folder: Path, results: dict, samples: bytes | None = None) -> str:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(results).replace(f'"{HUGE}"', "9" * 5000), encoding="utf-8")
    if samples is not None:
        (folder / "samples.jsonl").write_bytes(samples)
    return folder.name


def change(*path, value):
    def edit(results):
        target = results
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def rename_task(name):
    def edit(results):
        results["tasks"] = {name: results["tasks"]["jobs"]}

    return edit


GROUP = ("tasks", "itap-at", "results", "groups", "base-1")


def huge_interval(results):
    results["tasks"]["itap-at"]["results"]["groups"]["base-1"].update(bias_score=1e308, ci_low=-1e308, ci_high=1e308)


def html_everywhere(results):
    """D21: raw HTML in every text of a results file that the report and the comparison copy."""
    results["created"] = PAYLOAD
    results["equita"]["version"] = PAYLOAD
    results["model"]["id"] = "org/$\\undefined$ " + PAYLOAD  # and math that matplotlib cannot parse, in the plot titles
    itap = results["tasks"].pop("itap-at")
    itap["results"]["warnings"] = [PAYLOAD]
    itap["results"]["groups"] = {PAYLOAD: {**itap["results"]["groups"]["base-1"], "warnings": [PAYLOAD, "constant_answer"]}, "$\\x$": _part(0.1)}
    results["tasks"]["<img src=x onerror=alert(3)>"] = itap  # a task name becomes a figure's alt text and link


# (case, edit of a valid results.json, the one-line message): each is refused by the schema
# wherever results are read (report, comparison, leaderboard, verify).
CRAFTED = [
    ("parameters a string", change("model", "parameters", value="many"), "model.parameters: expected a count of parameters (a non-negative integer) or null, got 'many'"),
    ("parameters an object", change("model", "parameters", value={"n": 1}), "model.parameters: expected a count of parameters"),
    ("parameters negative", change("model", "parameters", value=-5), "model.parameters: expected a count of parameters"),
    ("a group that is a number", change(*GROUP, value=5), "tasks.itap-at.results.groups.base-1: expected an object, got 5"),
    ("a group that is a list", change("tasks", "jobs", "results", "groups", value={"1": [1]}), "tasks.jobs.results.groups.1: expected an object, got [1]"),
    ("a group without its scores", change(*GROUP, value={}), "tasks.itap-at.results.groups.base-1: missing 'bias_score', 'ci_low'"),
    ("a group's spread a string", change(*GROUP, "instruction_spread", value="x"), "groups.base-1.instruction_spread: expected an object or null, got 'x'"),
    ("a group's warnings not text", change(*GROUP, "warnings", value=[1]), "groups.base-1.warnings: expected a list of strings"),
    ("an instruction that is a number", change(*GROUP, "instructions", "1", value=3), "groups.base-1.instructions.1: expected an object, got 3"),
    ("a group name with a newline", change("tasks", "itap-at", "results", "groups", value={"a\nb": _part(0.1)}), "the name 'a\\nb' is empty, too long or holds control"),
    ("request type a list", change("tasks", "jobs", "request", "type", value=[1]), "tasks.jobs.request.type: [1] is not one of Generate, Loglikelihood"),
    ("request type unknown", change("tasks", "jobs", "request", "type", value="Chat"), "tasks.jobs.request.type: 'Chat' is not one of"),
    ("dataset version empty", change("tasks", "jobs", "dataset", "version", value=""), "tasks.jobs.dataset.version '' is not a version X.Y.Z"),
    ("dataset version ..", change("tasks", "jobs", "dataset", "version", value=".."), "tasks.jobs.dataset.version '..' is not a version X.Y.Z"),
    ("dataset version 150 digits", change("tasks", "jobs", "dataset", "version", value="1" * 150 + ".0.0"), "is not a version X.Y.Z"),
    ("task name 200 bytes", rename_task("è" * 100), "the task name is too long to name a page or file (600 characters once %XX-quoted"),
    ("model id 248 characters quoted", change("model", "id", value="modello-" + "è" * 40), "model.id: too long to name a page"),
    ("task name with a newline", rename_task("jobs\nevil"), "tasks.jobs\\nevil: task name 'jobs\\nevil' cannot name a file"),
    ("a score of 1e308, interval ±1e308", huge_interval, "groups.base-1.bias_score: expected a finite number or null, got 1e+308 (no result is that large)"),
    ("a score off the scale", change("tasks", "jobs", "results", "bias_score", value=2.0), "tasks.jobs.results.bias_score: 2.0 is outside the metric's scale [0, 1]"),
    ("a 400-digit integer", change("tasks", "jobs", "results", "bias_score", value=-(10**400)), "bias_score: expected a finite number or null, got an integer of 401 digits"),
    ("a 5000-digit integer", change("tasks", "jobs", "results", "n", value=HUGE), "holds a number too long to be a result"),
    ("limit a string", change("settings", "limit", value="all"), "settings.limit: expected a row count or null, got 'all'"),
]  # fmt: skip
NO_NEWLINE = b"x" * (MAX_SAMPLE_LINE_BYTES + 1)  # D20: a samples file that is one line (2 GB in the report; the bound is what matters)


# -- the report and the comparison --------------------------------------------------------------------

# (case, edit, samples of the crafted folder, exit code, message)
REPORT = [
    *((case, edit, None, 1, message) for case, edit, message in CRAFTED),
    ("samples without a newline", None, NO_NEWLINE, 1, f"samples.jsonl line 1: longer than a sample can be (over {MAX_SAMPLE_LINE_BYTES} bytes"),
    ("HTML in every text field", html_everywhere, None, 0, "wrote"),
]  # fmt: skip


@pytest.mark.parametrize("command", ["report", "comparison"])
@pytest.mark.parametrize("case, edit, samples, code, message", REPORT, ids=[row[0] for row in REPORT])
def test_report_and_comparison_probes(tmp_path, monkeypatch, command, case, edit, samples, code, message):
    results = valid()
    if edit:
        edit(results)
    folders = [write(tmp_path / "crafted", results, samples)]
    if command == "comparison":
        folders.append(write(tmp_path / "good", valid()))
    before = tree(tmp_path)
    got, output = invoke(["report", *folders, "--out", "out"], tmp_path, monkeypatch)
    assert got == code and message in output, output
    assert "Traceback" not in output
    if code:
        assert output.strip().count("\n") == 0, output  # one line
    else:
        written = (tmp_path / "out" / ("report.md" if command == "report" else "comparison.md")).read_text(encoding="utf-8")
        assert "<script" not in written and "<img" not in written and "&lt;script&gt;" in written
        assert "](plots/%3Cimg%20src%3Dx" in written or command == "comparison"  # a figure's link is a URL
    assert {name: digest for name, digest in tree(tmp_path).items() if not name.startswith("out")} == before


# -- the leaderboard -----------------------------------------------------------------------------------


def good(tmp: Path) -> str:
    return write(tmp / "good", valid())


def crafted(edit=None, samples=None):
    """A bad results folder given with a good one: the bad one is left out, the site built."""

    def setup(tmp: Path) -> list[str]:
        results = valid()
        if edit:
            edit(results)
        return [write(tmp / "crafted", results, samples), good(tmp), "--out", "site"]

    return setup


def earlier_site(tmp: Path, marker: dict, files: dict[str, str]) -> None:
    site = tmp / "site"
    for name, text in {"equita-site.json": json.dumps(marker), **files}.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)


def out_is_here(tmp: Path) -> list[str]:
    """D1: `--out .` in a folder holding an earlier site's marker, a results folder and notes."""
    earlier_site(tmp, {"pages": 1, "results": 1}, {"notes.txt": "appunti"})
    write(tmp / "site" / "myresults", valid())
    return ["myresults", "--out", ".", "--cwd", "site"]


def out_holds_the_current_folder(tmp: Path) -> list[str]:
    (tmp / "site" / "here").mkdir(parents=True)
    return [f"../../{good(tmp)}", "--out", "..", "--cwd", "site/here"]


def input_inside_an_earlier_site(tmp: Path) -> list[str]:
    """D1: results folder inside an earlier site, and notes."""
    earlier_site(tmp, {"pages": 1, "results": 1, "files": ["index.html"]}, {"index.html": "old", "NOTES.md": "appunti"})
    write(tmp / "site" / "my-results", valid())
    return ["site/my-results", "--out", "site"]


def notes_in_an_earlier_site(tmp: Path) -> list[str]:
    earlier_site(tmp, {"pages": 1, "results": 1, "files": ["index.html"]}, {"index.html": "old", "notes.txt": "appunti"})
    return [good(tmp), "--out", "site"]


def out_inside_an_input(tmp: Path) -> list[str]:
    return [good(tmp), "--out", "good/site"]


def rebuild_over_an_earlier_site(tmp: Path) -> list[str]:
    """The files an earlier site listed are replaced; a page it listed that this site does not write is removed."""
    earlier_site(tmp, {"pages": 2, "results": 1, "files": ["index.html", "model-old.html", "files/old/results.json"]},
                 {"index.html": "old", "model-old.html": "old", "files/old/results.json": "{}"})  # fmt: skip
    return [good(tmp), "--out", "site"]


def rebuild_over_a_site_without_a_file_list(tmp: Path) -> list[str]:
    """An earlier equita's site (its marker lists no files): its own kinds of files only."""
    earlier_site(tmp, {"pages": 2, "results": 1}, {"index.html": "old", "task-x-v1.html": "old", "files/old/samples.jsonl": ""})
    return [good(tmp), "--out", "site"]


def not_a_results_folder(tmp: Path) -> list[str]:
    (tmp / "stray").mkdir()
    (tmp / "stray" / "notes.txt").write_text("appunti")
    return ["stray", good(tmp), "--out", "site"]


def every_folder_bad(tmp: Path) -> list[str]:
    return [write(tmp / "crafted", {**valid(), "model": "x"}), "--out", "site"]


HUB = "hub"  # rows read from the one leaderboard built on the loopback Hub (hub_board)

# (case, setup(tmp) -> arguments (--cwd: run there) or HUB, exit code, message, what the target holds afterwards)
LEADERBOARD = [
    *((case, crafted(edit), 0, message, "good only") for case, edit, message in CRAFTED),
    ("samples without a newline", crafted(change("model", "id", value="fake/lines"), samples=NO_NEWLINE), 0, "crafted: samples left out, shown without them (not verifiable): crafted/samples.jsonl line 1: longer than a sample can be", "both"),
    ("not a results folder", not_a_results_folder, 0, "left out stray: no results.json", "good only"),
    ("every folder bad", every_folder_bad, 1, "leaderboard failed: no results to show: every one given was left out (named above)", "nothing"),
    ("--out . (D1)", out_is_here, 1, "leaderboard failed: --out .: is the current folder or holds it", "nothing"),
    ("--out holds the current folder", out_holds_the_current_folder, 1, "leaderboard failed: --out ..: is the current folder or holds it", "nothing"),
    ("an input inside an earlier site (D1)", input_inside_an_earlier_site, 1, "leaderboard failed: --out site: holds the results folder site/my-results", "nothing"),
    ("notes in an earlier site", notes_in_an_earlier_site, 1, "leaderboard failed: --out site: holds notes.txt, which the earlier site did not write", "nothing"),
    ("--out inside an input", out_inside_an_input, 1, "leaderboard failed: --out good/site: is inside the results folder good", "nothing"),
    ("a rebuild over an earlier site", rebuild_over_an_earlier_site, 0, "wrote site/index.html", "good only"),
    ("a rebuild over an older site", rebuild_over_a_site_without_a_file_list, 0, "wrote site/index.html", "good only"),
    ("hub: parameters a string (appendix B)", HUB, 0, "left out equita-test/results#1 jobs/v2.0.0/many.json: does not follow the results schema: model.parameters", "hub"),
    ("hub: a group that is a number", HUB, 0, "left out equita-test/results#2 jobs/v2.0.0/groups.json: does not follow the results schema: tasks.jobs.results.groups.1: expected an object, got 5", "hub"),
    ("hub: a long model id", HUB, 0, "left out equita-test/results#3 jobs/v2.0.0/long.json: does not follow the results schema: model.id: too long to name a page", "hub"),
    ("hub: a 400-digit integer", HUB, 0, "left out equita-test/results#4 jobs/v2.0.0/digits.json: does not follow the results schema: tasks.jobs.results.bias_score: expected a finite number or null, got an integer of 401 digits", "hub"),
    ("hub: samples without a newline", HUB, 0, "equita-test/results#5 jobs/v2.0.0/lines.json: samples left out, shown without them (not verifiable): samples line 1: longer than a sample can be", "hub"),
]  # fmt: skip


@pytest.fixture(scope="module")
def hub_board(tmp_path_factory):
    """D3 through the Hub: a results dataset whose main holds one good record and whose open pull
    requests add one bad record each (and one with samples of no newline); the leaderboard built once."""
    tmp = tmp_path_factory.mktemp("hub-board")
    record = {**valid(), "dataset": {"id": "jobs", "version": "2.0.0", "hub_repo": "equita-test/jobs", "commit": "0" * 40}}
    record["tasks"] = {"jobs": record["tasks"]["jobs"]}
    record["settings"]["tasks"] = ["jobs"]
    bad = {
        "many": {**record, "model": {**record["model"], "parameters": "many"}},
        "groups": json.loads(json.dumps(record)),
        "long": {**record, "model": {**record["model"], "id": "modello-" + "è" * 40}},
        "digits": json.loads(json.dumps(record)),
        "lines": {**record, "model": {**record["model"], "id": "fake/lines"}},
    }
    bad["groups"]["tasks"]["jobs"]["results"]["groups"] = {"1": 5}
    bad["digits"]["tasks"]["jobs"]["results"]["bias_score"] = -(10**400)
    with hub_server.running(tmp / "hf-home", "hf_test_token") as (state, env):
        repo = state.create_repo("dataset", "equita-test/results")
        state.commit_to_main("dataset", "equita-test/results", {"jobs/v2.0.0/good.json": json.dumps(record).encode()}, "a merged submission")
        main = repo.branches["main"]
        for number, (name, content) in enumerate(bad.items(), 1):
            files = {**repo.files(main), f"jobs/v2.0.0/{name}.json": json.dumps(content).encode()}
            if name == "lines":
                files["jobs/v2.0.0/lines.samples.jsonl"] = NO_NEWLINE
            head = state.new_commit(repo, main, files, f"submission {name}")
            repo.pulls.append({"num": number, "title": name, "description": "", "head": head, "base": main, "status": "open"})
        done = subprocess.run([*EQUITA, "leaderboard", "--results-repo", "equita-test/results", "--out", str(tmp / "site"), "--no-verify"],
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    return done, tmp / "site"


def model_pages(site: Path) -> int:
    return len(list(site.glob("model-*.html")))


@pytest.mark.parametrize("case, setup, code, message, afterwards", LEADERBOARD, ids=[row[0] for row in LEADERBOARD])
def test_leaderboard_probes(tmp_path, monkeypatch, request, case, setup, code, message, afterwards):
    if setup == HUB:
        done, site = request.getfixturevalue("hub_board")
        assert done.returncode == code and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert any(message in line for line in done.stderr.splitlines()), done.stderr  # named, on one line
        assert "equita-test/results: 1 merged, 1 pending from 5 open pull requests; 4 left out (named above)" in done.stderr
        assert model_pages(site) == 2  # the merged record and the pull request whose samples were left out
        return
    args = setup(tmp_path)
    cwd = tmp_path
    if "--cwd" in args:
        cwd = tmp_path / args[args.index("--cwd") + 1]
        args = args[: args.index("--cwd")]
    target = args[args.index("--out") + 1]
    before = tree(tmp_path)
    got, output = invoke(["leaderboard", *args, "--no-verify"], cwd, monkeypatch)
    assert got == code and message in output, output
    assert "Traceback" not in output
    line = next(line for line in output.splitlines() if message in line)  # the message is one line
    if case in dict((row[0], row) for row in CRAFTED):
        assert line.startswith("left out crafted/results.json: "), line  # the bad folder, named
    site = (cwd / target).resolve()
    outside = {name: digest for name, digest in tree(tmp_path).items() if not (tmp_path / name).resolve().is_relative_to(site)}
    if code:
        assert tree(tmp_path) == before, "a refused command changes nothing"
        return
    assert outside == {name: digest for name, digest in before.items() if not (tmp_path / name).resolve().is_relative_to(site)}
    assert not [name for name in tree(tmp_path) if name.split("/")[-1].startswith(".")], "no staging folder left"
    assert model_pages(site) == (2 if afterwards == "both" else 1)
    assert not (site / "model-old.html").exists() and not (site / "files" / "old").exists() and not (site / "task-x-v1.html").exists()
    assert json.loads((site / "equita-site.json").read_text())["files"]  # what a rebuild may remove
