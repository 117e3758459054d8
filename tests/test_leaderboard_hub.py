"""The leaderboard on the results dataset of the loopback Hub (hub_server.py), through the real client:
merged and pending submissions, bad ones named and left out, the site published as a static Space."""

from __future__ import annotations

import copy
import json
import re
import socket
import subprocess
import sys
from html.parser import HTMLParser

import pytest
import yaml

import hub_server
from conftest import EQUITA
from equita.builders import jobs

V = jobs.VERSION  # the Jobs dataset as built

TOKEN = "hf_secret_leaderboard_token_9876543210"
RESULTS = "equita-test/results"
MERGED, PENDING = "fake/merged", "fake/pending"  # model ids with a "/": their records are fake%2F....json


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with hub_server.running(tmp_path_factory.mktemp("hf-home"), TOKEN) as (state, env):
        yield state, env


def equita(env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([*EQUITA, *args], capture_output=True, text=True, env=env, timeout=300)
    assert TOKEN not in done.stdout + done.stderr  # the token never reaches the output
    return done


def said(done) -> str:
    return " ".join(done.stderr.split())


def failure(done) -> str:
    """The one line a failed command ends with (log lines may come before it)."""
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("leaderboard failed: "), done.stderr[-2000:]
    return lines[-1]


@pytest.fixture(scope="module")
def board(hub, tmp_path_factory):
    """The results dataset as maintainers keep it: one submission merged (through the Hub's merge
    call), one opened after that and still open; returns the two results folders."""
    from fake_model import ScriptedModel

    from equita.runners.run import RunOptions, run

    state, env = hub
    build = tmp_path_factory.mktemp("datasets") / "jobs"
    jobs.build(build)
    # The dataset is published while the scripted models run on the same build.
    publishing = subprocess.Popen([*EQUITA, "publish", str(build), "--repo-id", "equita-test/jobs", "--version", jobs.VERSION],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    state.create_repo("dataset", RESULTS)
    folders = {}
    with pytest.MonkeyPatch.context() as patch:
        for name in (MERGED, PENDING):
            patch.setattr("equita.runners.run.load_model", lambda *args, name=name, **kwargs: ScriptedModel(name=name))
            folders[name] = tmp_path_factory.mktemp("results") / name.replace("/", "-")
            run(RunOptions(model=name, out=folders[name], tasks="jobs", datasets=str(build.parent), limit=3), log=lambda message: None)
    output, errors = publishing.communicate(timeout=300)
    assert publishing.returncode == 0 and TOKEN not in output + errors, errors[-2000:]
    for number, name in enumerate((MERGED, PENDING), 1):
        done = equita(env, "submit", str(folders[name]), "--results-repo", RESULTS, "--datasets-org", "equita-test")
        assert done.returncode == 0, done.stderr[-2000:]
        if name == MERGED:  # a maintainer merges the first before the second is opened
            code = f"from huggingface_hub import HfApi; HfApi().merge_pull_request({RESULTS!r}, {number}, repo_type='dataset')"
            merged = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
            assert merged.returncode == 0 and TOKEN not in merged.stdout + merged.stderr, merged.stderr[-2000:]
    repo = state.repos[("dataset", RESULTS)]
    assert [pull["status"] for pull in repo.pulls] == ["merged", "open"]
    assert {f"jobs/v{V}/fake%2Fmerged.json", f"jobs/v{V}/fake%2Fmerged.samples.jsonl"} <= set(repo.files(repo.branches["main"]))
    return folders


def fork(state, name: str) -> str:
    """A copy of the results dataset to change in one test only."""
    repo = copy.deepcopy(state.repos[("dataset", RESULTS)])
    repo.id = f"equita-test/{name}"
    state.repos[("dataset", repo.id)] = repo
    return repo.id


class Rows(HTMLParser):
    """The ranking rows of a task page: data-model -> the status tags in that row."""

    def __init__(self):
        super().__init__()
        self.rows: dict[str, set[str]] = {}
        self.current: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "data-model" in attrs:
            self.current = attrs["data-model"]
            self.rows[self.current] = set()
        elif tag == "span" and self.current is not None and "tag" in (attrs.get("class") or "").split():
            self.rows[self.current] |= set(attrs["class"].split()) - {"tag"}

    def handle_endtag(self, tag):
        if tag == "tr":
            self.current = None


def ranking_rows(site) -> dict[str, set[str]]:
    pages = sorted(site.glob("task-jobs-*.html"))
    assert len(pages) == 1
    parser = Rows()
    parser.feed(pages[0].read_text(encoding="utf-8"))
    return parser.rows


def leaderboard(env, site, *args):
    return equita(env, "leaderboard", *args, "--out", str(site), "--no-verify")


def test_the_site_shows_the_merged_submission_as_merged_and_the_open_one_as_pending(hub, board, tmp_path):
    _, env = hub
    # With --verify (the default): each record's scores are recomputed from the samples that came with it.
    done = equita(env, "leaderboard", "--results-repo", RESULTS, "--out", str(tmp_path / "site"), "--datasets", "equita-test")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{RESULTS}: 1 merged, 1 pending from 1 open pull requests" in said(done) and "left out" not in said(done)
    rows = ranking_rows(tmp_path / "site")
    assert rows == {f"{MERGED}@scripted": {"merged", "verified"}, f"{PENDING}@scripted": {"pending", "verified"}}
    # The model pages link each record's samples.
    samples = sorted((tmp_path / "site" / "files").glob("*/samples.jsonl"))
    assert len(samples) == 2
    local = sorted((board[name] / "samples.jsonl").read_text(encoding="utf-8").count("\n") for name in (MERGED, PENDING))
    assert sorted(path.read_text(encoding="utf-8").count("\n") for path in samples) == local


def test_a_pull_request_shows_only_what_it_changes_not_an_older_copy_of_main(hub, board, tmp_path):
    """The open pull request branched from main when it held the merged record; a maintainer has
    since changed that record on main. The pull request's older copy is not a pending entry."""
    state, env = hub
    repo_id = fork(state, "results-edited")
    repo = state.repos[("dataset", repo_id)]
    path = f"jobs/v{V}/fake%2Fmerged.json"
    record = json.loads(repo.files(repo.branches["main"])[path])
    record["tasks"]["jobs"]["results"]["warnings"] = ["corrected by the maintainers"]
    state.commit_to_main("dataset", repo_id, {path: json.dumps(record).encode()}, "maintainers: correct a record")
    assert path in repo.files(repo.pulls[1]["head"]) and repo.files(repo.pulls[1]["head"])[path] != repo.files(repo.branches["main"])[path]
    done = leaderboard(env, tmp_path / "site", "--results-repo", repo_id)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{repo_id}: 1 merged, 1 pending from 1 open pull requests" in said(done)
    assert ranking_rows(tmp_path / "site") == {f"{MERGED}@scripted": {"merged", "unverified"}, f"{PENDING}@scripted": {"pending", "unverified"}}


def test_bad_records_and_unreadable_pull_requests_are_named_and_left_out(hub, board, tmp_path):
    state, env = hub
    repo_id = fork(state, "results-bad")
    repo = state.repos[("dataset", repo_id)]
    main = repo.files(repo.branches["main"])
    good = json.loads(main[f"jobs/v{V}/fake%2Fmerged.json"])
    wrong_schema = {**good, "schema": "other/1"}
    no_model = {key: value for key, value in good.items() if key != "model"}
    tampered = {**good, "model": {**good["model"], "id": "fake/tampered"}}  # its samples are not those its sha256 names
    state.commit_to_main("dataset", repo_id, {
        f"jobs/v{V}/broken.json": b"{not json",
        f"jobs/v{V}/latin1.json": "{\"città\": 1}".encode("latin-1"),
        f"jobs/v{V}/other-schema.json": json.dumps(wrong_schema).encode(),
        f"jobs/v{V}/no-model.json": json.dumps(no_model).encode(),
        "gfg/v0.1.0/misplaced.json": json.dumps(good).encode(),  # a jobs record under another dataset's path
        f"jobs/{V}/unversioned.json": json.dumps(good).encode(),
        "stray.json": json.dumps(good).encode(),
        f"jobs/v{V}/a:b.json": json.dumps(good).encode(),
        f"jobs/v{V}/line\nbreak.json": json.dumps(good).encode(),
        f"jobs/v{V}/tampered.json": json.dumps(tampered).encode(),
        f"jobs/v{V}/tampered.samples.jsonl": main[f"jobs/v{V}/fake%2Fmerged.samples.jsonl"] + b'{"task": "jobs", "id": "extra"}\n',
    }, "maintainers: bad files")  # fmt: skip
    # A pull request whose ref cannot be read, and one whose record is not a results record.
    repo.pulls.append({"num": 3, "title": "gone", "description": "", "head": "0" * 40, "base": repo.branches["main"], "status": "open"})
    head = state.new_commit(repo, repo.branches["main"], {**repo.files(repo.branches["main"]), f"jobs/v{V}/bad-pull.json": b"[1, 2]"}, "bad pull")
    repo.pulls.append({"num": 4, "title": "bad", "description": "", "head": head, "base": repo.branches["main"], "status": "open"})
    done = leaderboard(env, tmp_path / "site", "--results-repo", repo_id)
    assert done.returncode == 0, done.stderr[-2000:]
    text = said(done)
    expected = {
        f"jobs/v{V}/broken.json": "not a JSON results record",
        f"jobs/v{V}/latin1.json": "not UTF-8 text",
        f"jobs/v{V}/other-schema.json": "schema 'other/1', this equita reads 'equita.results/1'",
        f"jobs/v{V}/no-model.json": "does not follow the results schema: results: missing 'model'",
        "gfg/v0.1.0/misplaced.json": "its dataset is not gfg v0.1.0, the one its path names",
        f"jobs/{V}/unversioned.json": "not at <dataset id>/v<X.Y.Z>/<file>.json",
        "stray.json": "not at <dataset id>/v<X.Y.Z>/<file>.json",
        f"jobs/v{V}/a:b.json": "cannot name a file",
        f"jobs/v{V}/line\\nbreak.json": "cannot name a file",
    }
    for path, why in expected.items():
        line = next((line for line in done.stderr.splitlines() if line.startswith(f"left out {repo_id}/") and path in line), None)
        assert line is not None and why in line, (path, done.stderr)
    line = next(line for line in done.stderr.splitlines() if line.startswith(f"left out pull request {repo_id}#3: "))
    assert "its files cannot be read: HfHubHTTPError: Client error '404 Not Found'" in line
    assert f"left out {repo_id}#4 jobs/v{V}/bad-pull.json: not a JSON object" in text
    assert f"{repo_id}/jobs/v{V}/tampered.json: its samples differ from the sha256 the record names; shown without samples" in text
    assert f"{repo_id}: 2 merged, 1 pending from 3 open pull requests; 11 left out (named above)" in text
    assert "Traceback" not in done.stderr
    # The good submissions are on the site, the bad ones nowhere.
    assert set(ranking_rows(tmp_path / "site")) == {f"{MERGED}@scripted", f"{PENDING}@scripted", "fake/tampered@scripted"}
    assert len(list((tmp_path / "site" / "files").glob("*/samples.jsonl"))) == 2  # not the tampered ones
    assert not list(tmp_path.glob("**/line*")) and not list(tmp_path.glob("**/a:b*"))


def test_an_unreachable_hub_is_one_line_without_the_token(hub, board, tmp_path):
    _, env = hub
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = leaderboard({**env, "HF_ENDPOINT": f"http://127.0.0.1:{port}"}, tmp_path / "site", "--results-repo", RESULTS)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert failure(done).startswith(f"leaderboard failed: {RESULTS}: cannot read the results dataset; retry")
    assert not (tmp_path / "site").exists()


def space_files(state, space_id) -> dict[str, bytes]:
    space = state.repos[("space", space_id)]
    return space.files(space.branches["main"])


def site_files(site) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != "equita-site.json"}


def test_publish_makes_a_static_space_of_the_site_and_a_republish_removes_stale_pages(hub, board, tmp_path):
    state, env = hub
    site = tmp_path / "site"
    done = leaderboard(env, site, "--results-repo", RESULTS, "--publish", "--space", "equita-test/board")
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^commit [0-9a-f]{40}$", done.stdout, re.MULTILINE)
    files = space_files(state, "equita-test/board")
    built = site_files(site)
    assert "index.html" in built and any(name.startswith("task-jobs-") for name in built) and {"style.css", "leaderboard.js"} <= set(built)
    assert sum(name.startswith("model-") for name in built) == 2 and sum(name.endswith("samples.jsonl") for name in built) == 2
    assert set(files) == {*built, "README.md", ".gitattributes"}
    assert all(files[name] == data for name, data in built.items())
    card = yaml.safe_load(files["README.md"].decode().split("---\n")[1])
    assert card["sdk"] == "static" and card["app_file"] == "index.html"
    assert state.repos[("space", "equita-test/board")].sdk == "static"
    assert not (site / "README.md").exists()  # the card went into the commit only
    commits = len(state.repos[("space", "equita-test/board")].commits)

    # A maintainer's own file in the Space stays; pages of results no longer shown go.
    state.commit_to_main("space", "equita-test/board", {"logo.png": b"PNG"}, "maintainers: a logo")
    done = leaderboard(env, site, str(board[MERGED]), "--publish", "--space", "equita-test/board")  # the same --out again: rebuilt
    assert done.returncode == 0, done.stderr[-2000:]
    files = space_files(state, "equita-test/board")
    built = site_files(site)
    assert sum(name.startswith("model-") for name in built) == 1
    assert set(files) == {*built, "README.md", ".gitattributes", "logo.png"}
    assert len(state.repos[("space", "equita-test/board")].commits) == commits + 2  # the logo, then one commit for the site

    # A failed upload publishes nothing and says to retry.
    state.fail_next_commits = 1000
    try:
        done = leaderboard(env, site, "--results-repo", RESULTS, "--publish", "--space", "equita-test/board")
    finally:
        state.fail_next_commits = 0
    assert done.returncode == 1 and "Traceback" not in done.stderr
    line = failure(done)
    assert "equita-test/board: publishing the leaderboard Space failed, nothing was published" in line and "retry the same command" in line and "503" in line
    assert set(space_files(state, "equita-test/board")) == set(files)


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--publish"], 2, "--publish needs --space ORG/NAME"),
        (["--publish", "--space", "no-org"], 2, "--space 'no-org': expected ORG/NAME"),
        (["--publish", "--space", "equita-test/app"], 1, "--space equita-test/app: is a gradio Space, not a static one"),
    ],
)
def test_publish_refuses(hub, board, tmp_path, args, code, message):
    state, env = hub
    state.create_repo("space", "equita-test/app", sdk="gradio")
    before = set(space_files(state, "equita-test/app"))
    done = leaderboard(env, tmp_path / "site", str(board[MERGED]), *args)
    assert done.returncode == code and message in said(done) and "Traceback" not in done.stderr
    assert set(space_files(state, "equita-test/app")) == before
