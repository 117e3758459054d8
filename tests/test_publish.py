"""Publishing end to end through the real `huggingface_hub` client, against the loopback Hub of hub_server.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import hub_server
from equita.builders import jobs
from equita.builders.common import table_path, verify_manifest

TOKEN = "hf_secret_test_token_0123456789"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    server, state = hub_server.start()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE")}
    env.update(
        HF_ENDPOINT=f"http://127.0.0.1:{server.server_port}", HF_HUB_DISABLE_XET="1", HF_TOKEN=TOKEN,
        HF_HOME=str(tmp_path_factory.mktemp("hf-home")), HF_HUB_DISABLE_TELEMETRY="1",
    )  # fmt: skip
    yield state, env
    server.shutdown()


def equita(env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run(["equita", *args], capture_output=True, text=True, env=env, timeout=300)
    assert TOKEN not in done.stdout + done.stderr  # the token never reaches the output
    return done


def python(env, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def load_feminine(env, repo, revision) -> list[str]:
    code = f"import json; from datasets import load_dataset; print(json.dumps(list(load_dataset({repo!r}, 'professions', split='test', revision={revision!r})['feminine'])))"
    return json.loads(python(env, code).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory):
    """Jobs as built (1.0.0), and a 1.1.0 whose first feminine form differs."""
    first = tmp_path_factory.mktemp("v1") / "jobs"
    jobs.build(first)
    tables = tmp_path_factory.mktemp("tables") / "jobs"
    shutil.copytree(table_path("jobs", "professions.tsv").parent, tables)
    path = tables / "professions.tsv"
    path.write_text(path.read_text(encoding="utf-8").replace("ambasciatore\tambasciatrice", "ambasciatore\tambasciatora", 1), encoding="utf-8")
    second = tmp_path_factory.mktemp("v2") / "jobs"
    original = jobs.VERSION
    jobs.VERSION = "1.1.0"
    try:
        jobs.build(second, tables_dir=tables)
    finally:
        jobs.VERSION = original
    return first, second


def test_publish_tags_each_version_and_loads_it_back(hub, two_versions):
    state, env = hub
    first, second = two_versions
    done = equita(env, "publish", str(first), "--repo-id", "equita-test/jobs", "--version", "1.0.0")
    assert done.returncode == 0, done.stderr
    commit = done.stdout.split("commit ")[1].split()[0]
    assert "tag v1.0.0" in done.stdout and len(commit) == 40
    repo = state.repos[("dataset", "equita-test/jobs")]
    assert repo.tags["v1.0.0"] == commit
    assert set(repo.files(commit)) >= {"README.md", "manifest.json", "professions/test.parquet", "sentences/test.parquet"}
    assert repo.files(commit)["professions/test.parquet"] == (first / "professions" / "test.parquet").read_bytes()

    done = equita(env, "publish", str(second), "--repo-id", "equita-test/jobs", "--version", "1.1.0")
    assert done.returncode == 0, done.stderr
    assert load_feminine(env, "equita-test/jobs", "v1.0.0")[0] == "ambasciatrice"
    assert load_feminine(env, "equita-test/jobs", "v1.1.0")[0] == "ambasciatora"  # the older tag still gives the older data


@pytest.mark.parametrize(
    "setup, args, message",
    [
        ("published", ["--version", "1.0.0"], "tag v1.0.0 already exists and is never moved"),
        ("plain", ["--version", "2.0.0"], "its card declares version 1.0.0, not 2.0.0"),
        ("damaged", ["--version", "1.0.0"], "professions/test.parquet: sha256 differs from manifest"),
    ],
)
def test_publish_refuses(hub, two_versions, tmp_path, setup, args, message):
    state, env = hub
    first, _ = two_versions
    folder = tmp_path / "jobs"
    shutil.copytree(first, folder)
    repo_id = "equita-test/jobs" if setup == "published" else f"equita-test/refused-{setup}"
    if setup == "published" and ("dataset", repo_id) not in state.repos:
        assert equita(env, "publish", str(folder), "--repo-id", repo_id, "--version", "1.0.0").returncode == 0
    if setup == "damaged":
        (folder / "professions" / "test.parquet").write_bytes(b"not parquet")
    done = equita(env, "publish", str(folder), "--repo-id", repo_id, *args)
    assert done.returncode == 1
    assert message in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


def test_an_interrupted_upload_changes_nothing_and_a_retry_succeeds(hub, two_versions, tmp_path):
    state, env = hub
    first, _ = two_versions
    before = sorted(p.read_bytes() for p in first.rglob("*") if p.is_file())
    state.fail_next_commits = 10  # more than the client's retries
    done = equita(env, "publish", str(first), "--repo-id", "equita-test/flaky", "--version", "1.0.0")
    assert done.returncode == 1
    text = " ".join(done.stderr.split())
    assert "upload failed, nothing was published" in text and "retry the same command" in text and "503" in text
    assert sorted(p.read_bytes() for p in first.rglob("*") if p.is_file()) == before and verify_manifest(first) == []
    assert state.repos[("dataset", "equita-test/flaky")].tags == {}
    state.fail_next_commits = 0
    done = equita(env, "publish", str(first), "--repo-id", "equita-test/flaky", "--version", "1.0.0")
    assert done.returncode == 0, done.stderr
    assert "v1.0.0" in state.repos[("dataset", "equita-test/flaky")].tags
    # Every request carried the token, and it never appeared in any output.
    commits = [h for m, p, h in state.requests if m == "POST" and "/commit/" in p]
    assert commits and all(h.get("authorization") == f"Bearer {TOKEN}" for h in commits)
