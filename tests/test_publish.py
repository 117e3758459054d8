"""Publishing end to end through the real `huggingface_hub` client, against the loopback Hub of hub_server.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import hub_server
from conftest import EQUITA, REPO
from equita.builders import jobs
from equita.builders.common import table_path, verify_manifest

TOKEN = "hf_secret_test_token_0123456789"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    server, state = hub_server.start()
    # Whatever the caller's offline switches (TRANSFORMERS_OFFLINE counts for huggingface_hub too), this Hub is reachable.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env.update(
        HF_ENDPOINT=f"http://127.0.0.1:{server.server_port}", HF_HUB_DISABLE_XET="1", HF_TOKEN=TOKEN,
        HF_HOME=str(tmp_path_factory.mktemp("hf-home")), HF_HUB_DISABLE_TELEMETRY="1",
    )  # fmt: skip
    yield state, env
    server.shutdown()


def equita(env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([*EQUITA, *args], capture_output=True, text=True, env=env, timeout=300)
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
    """Jobs as built (2.0.0), and a 2.1.0 whose first feminine form differs."""
    first = tmp_path_factory.mktemp("v1") / "jobs"
    jobs.build(first)
    tables = tmp_path_factory.mktemp("tables") / "jobs"
    shutil.copytree(table_path("jobs", "professions.tsv").parent, tables)
    path = tables / "professions.tsv"
    path.write_text(path.read_text(encoding="utf-8").replace("ambasciatore\tambasciatrice", "ambasciatore\tambasciatora", 1), encoding="utf-8")
    second = tmp_path_factory.mktemp("v2") / "jobs"
    original = jobs.VERSION
    jobs.VERSION = "2.1.0"
    try:
        jobs.build(second, tables_dir=tables)
    finally:
        jobs.VERSION = original
    return first, second


def test_publish_tags_each_version_and_loads_it_back(hub, two_versions):
    state, env = hub
    first, second = two_versions
    done = equita(env, "publish", str(first), "--repo-id", "equita-test/jobs", "--version", "2.0.0")
    assert done.returncode == 0, done.stderr
    commit = done.stdout.split("commit ")[1].split()[0]
    assert "tag v2.0.0" in done.stdout and len(commit) == 40
    repo = state.repos[("dataset", "equita-test/jobs")]
    assert repo.tags["v2.0.0"] == commit
    assert set(repo.files(commit)) >= {"README.md", "manifest.json", "professions/test.parquet", "sentences/test.parquet"}
    assert repo.files(commit)["professions/test.parquet"] == (first / "professions" / "test.parquet").read_bytes()
    # Parquet went through the LFS batch API (PUT of the bytes), the card inline in the commit.
    assert any(m == "PUT" and p.startswith("/lfs-upload/") for m, p, h in state.requests)
    assert any(m == "POST" and p.endswith(".git/info/lfs/objects/batch") for m, p, h in state.requests)

    done = equita(env, "publish", str(second), "--repo-id", "equita-test/jobs", "--version", "2.1.0")
    assert done.returncode == 0, done.stderr
    assert load_feminine(env, "equita-test/jobs", "v2.0.0")[0] == "ambasciatrice"
    assert load_feminine(env, "equita-test/jobs", "v2.1.0")[0] == "ambasciatora"  # the older tag still gives the older data


@pytest.mark.parametrize(
    "setup, args, message",
    [
        ("published", ["--version", "2.0.0"], "tag v2.0.0 already exists and is never moved"),
        ("plain", ["--version", "3.0.0"], "its card declares version 2.0.0, not 3.0.0"),
        ("damaged", ["--version", "2.0.0"], "professions/test.parquet: sha256 differs from manifest"),
    ],
)
def test_publish_refuses(hub, two_versions, tmp_path, setup, args, message):
    state, env = hub
    first, _ = two_versions
    folder = tmp_path / "jobs"
    shutil.copytree(first, folder)
    repo_id = "equita-test/jobs" if setup == "published" else f"equita-test/refused-{setup}"
    if setup == "published" and ("dataset", repo_id) not in state.repos:
        assert equita(env, "publish", str(folder), "--repo-id", repo_id, "--version", "2.0.0").returncode == 0
    if setup == "damaged":
        (folder / "professions" / "test.parquet").write_bytes(b"not parquet")
    done = equita(env, "publish", str(folder), "--repo-id", repo_id, *args)
    assert done.returncode == 1
    assert message in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("failing", ["fail_next_commits", "fail_next_lfs_uploads"])
def test_an_interrupted_upload_changes_nothing_and_a_retry_succeeds(hub, two_versions, tmp_path, failing):
    state, env = hub
    first, _ = two_versions
    before = sorted(p.read_bytes() for p in first.rglob("*") if p.is_file())
    repo_id = f"equita-test/flaky-{failing.split('_')[2]}"
    setattr(state, failing, 1000)  # more than the client's retries (it retries dropped uploads with backoff)
    done = equita(env, "publish", str(first), "--repo-id", repo_id, "--version", "2.0.0")
    assert done.returncode == 1
    text = " ".join(done.stderr.split())
    assert "upload failed, nothing was published" in text and "retry the same command" in text
    assert ("503" if failing == "fail_next_commits" else "RemoteProtocolError") in text and "Traceback" not in done.stderr
    assert sorted(p.read_bytes() for p in first.rglob("*") if p.is_file()) == before and verify_manifest(first) == []
    assert state.repos[("dataset", repo_id)].tags == {}
    setattr(state, failing, 0)
    done = equita(env, "publish", str(first), "--repo-id", repo_id, "--version", "2.0.0")
    assert done.returncode == 0, done.stderr
    assert "v2.0.0" in state.repos[("dataset", repo_id)].tags
    # Every request carried the token, and it never appeared in any output.
    commits = [h for m, p, h in state.requests if m == "POST" and "/commit/" in p]
    assert commits and all(h.get("authorization") == f"Bearer {TOKEN}" for h in commits)


def _ensure_published(state, env, folder):
    if "v2.0.0" not in getattr(state.repos.get(("dataset", "equita-test/jobs")), "tags", {}):
        assert equita(env, "publish", str(folder), "--repo-id", "equita-test/jobs", "--version", "2.0.0").returncode == 0


@pytest.fixture(scope="module")
def jobs_results(tmp_path_factory, two_versions, smollm2):
    from equita.runners.run import RunOptions, run

    first, _ = two_versions
    out = tmp_path_factory.mktemp("results") / "smollm2"
    run(RunOptions(model="smollm2", out=out, tasks="jobs", datasets=str(first.parent), limit=2), log=lambda m: None)
    return out


def test_publish_metric_space_loads_with_evaluate(hub):
    state, env = hub
    done = equita(env, "publish-metric", "metrics/itap_at_bias", "--repo-id", "equita-test/itap_at_bias")
    assert done.returncode == 0, done.stderr
    space = state.repos[("space", "equita-test/itap_at_bias")]
    files = space.files(space.branches["main"])
    # The classifier and its lexicon are sibling files that the module imports: they travel with it.
    assert {"itap_at_bias.py", "classifier.py", "lexicon.py", "README.md", "requirements.txt", "app.py"} <= set(files) and space.sdk == "gradio"
    assert files["lexicon.py"] == (REPO / "metrics" / "itap_at_bias" / "lexicon.py").read_bytes()
    assert b'evaluate.load("equita-test/itap_at_bias")' in files["app.py"]
    code = ("import evaluate; m = evaluate.load('equita-test/itap_at_bias'); "
            "r = m.compute(predictions=['Uomini', 'donne', 'Uomo, anche se oggi molte donne lo studiano.'], stereotypes=['uomini'] * 3, "
            "anti_stereotypes=['donne'] * 3, return_labels=True); print(r['bias_score'], r['labels'][2], r['classifier_version'])")  # fmt: skip
    from equita.metrics.itap_at_bias.lexicon import CLASSIFIER_VERSION

    assert python(env, code).strip().splitlines()[-1] == f"0.3333333333333333 stereotype {CLASSIFIER_VERSION}"


def test_publish_metric_needs_an_identifier_name(hub):
    _, env = hub
    done = equita(env, "publish-metric", "metrics/itap_at_bias", "--repo-id", "equita-test/itap-at-bias")
    assert done.returncode == 1 and "must be a Python identifier" in " ".join(done.stderr.split())


def test_submit_opens_pull_requests_once_pinned_to_the_dataset_commit(hub, two_versions, jobs_results):
    from huggingface_hub import parse_eval_result_entries

    state, env = hub
    first, _ = two_versions
    _ensure_published(state, env, first)
    state.create_repo("dataset", "equita-test/results")  # the maintainers' results dataset
    state.create_repo("model", "someone/smol")  # the model owner's repo
    args = ["submit", str(jobs_results), "--results-repo", "equita-test/results", "--model-repo", "someone/smol", "--datasets-org", "equita-test"]
    done = equita(env, *args)
    assert done.returncode == 0, done.stderr
    results_repo, model_repo = state.repos[("dataset", "equita-test/results")], state.repos[("model", "someone/smol")]
    assert len(results_repo.pulls) == 1 and len(model_repo.pulls) == 1
    assert results_repo.files(results_repo.branches["main"]).keys() == {".gitattributes"}  # a pull request, not a push
    record = json.loads(results_repo.files(results_repo.pulls[0]["head"])["jobs/v2.0.0/smollm2.json"])
    tag_commit = state.repos[("dataset", "equita-test/jobs")].tags["v2.0.0"]
    assert record["dataset"] == {"id": "jobs", "version": "2.0.0", "hub_repo": "equita-test/jobs", "commit": tag_commit}
    assert list(record["tasks"]) == ["jobs"] and record["model"]["id"] == "smollm2"
    import yaml

    entries = parse_eval_result_entries(yaml.safe_load(model_repo.files(model_repo.pulls[0]["head"])[".eval_results/equita-jobs.yaml"]))
    assert [(e.dataset_id, e.task_id, e.dataset_revision) for e in entries] == [("equita-test/jobs", "jobs", tag_commit)]
    assert entries[0].value == record["tasks"]["jobs"]["results"]["bias_score"]
    # The same results again: nothing new is opened.
    again = equita(env, *args)
    assert again.returncode == 0 and "already submitted as pull request #1" in again.stderr
    assert len(results_repo.pulls) == 1 and len(model_repo.pulls) == 1


@pytest.mark.parametrize("problem", ["unpublished", "invalid"])
def test_submit_refuses_what_cannot_be_pinned_or_validated(hub, jobs_results, tmp_path, problem):
    state, env = hub
    state.create_repo("dataset", "equita-test/results")
    folder = tmp_path / "results"
    shutil.copytree(jobs_results, folder)
    org = "nobody" if problem == "unpublished" else "equita-test"
    if problem == "invalid":
        results = json.loads((folder / "results.json").read_text())
        del results["tasks"]["jobs"]["dataset"]["revision"]
        (folder / "results.json").write_text(json.dumps(results))
    done = equita(env, "submit", str(folder), "--results-repo", "equita-test/results", "--datasets-org", org)
    assert done.returncode == 1
    message = {"unpublished": "nobody/jobs", "invalid": "tasks.jobs.dataset: missing 'revision'"}[problem]
    assert message in " ".join(done.stderr.split())


def test_run_push_submits_at_the_end(hub, two_versions, tmp_path, smollm2):
    state, env = hub
    first, _ = two_versions
    _ensure_published(state, env, first)
    state.create_repo("dataset", "equita-test/results")
    before = len(state.repos[("dataset", "equita-test/results")].pulls)
    done = equita(env, "run", "--model", "smollm2", "--tasks", "jobs", "--limit", "1", "--datasets", str(first.parent), "--out", str(tmp_path / "out"),
                  "--push", "--results-repo", "equita-test/results", "--datasets-org", "equita-test")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(state.repos[("dataset", "equita-test/results")].pulls) == before + 1
    assert (tmp_path / "out" / "results.json").is_file()
