"""Publishing end to end through the real `huggingface_hub` client, against the loopback Hub of hub_server.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

import hub_server
from conftest import EQUITA, REPO, UPSTREAM
from equita.builders import TASKS, gfg, jobs
from equita.builders.common import table_path, verify_manifest, write_dataset

# The Jobs version as built, and a minor release after it.
V = jobs.VERSION
NEXT = f"{V.split('.')[0]}.1.0"

TOKEN = "hf_secret_test_token_0123456789"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with hub_server.running(tmp_path_factory.mktemp("hf-home"), TOKEN) as (state, env):
        yield state, env


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
    """Jobs as built (V), and a NEXT whose first feminine form differs."""
    first = tmp_path_factory.mktemp("v1") / "jobs"
    jobs.build(first)
    tables = tmp_path_factory.mktemp("tables") / "jobs"
    shutil.copytree(table_path("jobs", "professions.tsv").parent, tables)
    path = tables / "professions.tsv"
    path.write_text(path.read_text(encoding="utf-8").replace("ambasciatore\tambasciatrice", "ambasciatore\tambasciatora", 1), encoding="utf-8")
    second = tmp_path_factory.mktemp("v2") / "jobs"
    original = jobs.VERSION
    jobs.VERSION = NEXT
    try:
        jobs.build(second, tables_dir=tables)
    finally:
        jobs.VERSION = original
    return first, second


def test_publish_tags_each_version_and_loads_it_back(hub, two_versions):
    state, env = hub
    first, second = two_versions
    done = equita(env, "publish", str(first), "--repo-id", "equita-test/jobs", "--version", V)
    assert done.returncode == 0, done.stderr
    commit = done.stdout.split("commit ")[1].split()[0]
    assert f"tag v{V}" in done.stdout and len(commit) == 40
    repo = state.repos[("dataset", "equita-test/jobs")]
    assert repo.tags[f"v{V}"] == commit
    assert set(repo.files(commit)) >= {"README.md", "manifest.json", "professions/test.parquet", "sentences/test.parquet"}
    assert repo.files(commit)["professions/test.parquet"] == (first / "professions" / "test.parquet").read_bytes()
    # Parquet went through the LFS batch API (PUT of the bytes), the card inline in the commit.
    assert any(m == "PUT" and p.startswith("/lfs-upload/") for m, p, h in state.requests)
    assert any(m == "POST" and p.endswith(".git/info/lfs/objects/batch") for m, p, h in state.requests)

    done = equita(env, "publish", str(second), "--repo-id", "equita-test/jobs", "--version", NEXT)
    assert done.returncode == 0, done.stderr
    assert load_feminine(env, "equita-test/jobs", f"v{V}")[0] == "ambasciatrice"
    assert load_feminine(env, "equita-test/jobs", f"v{NEXT}")[0] == "ambasciatora"  # the older tag still gives the older data


@pytest.mark.parametrize(
    "setup, args, message",
    [
        ("published", ["--version", V], f"tag v{V} already exists and is never moved"),
        ("plain", ["--version", "9.0.0"], f"its card declares version {V}, not 9.0.0"),
        ("damaged", ["--version", V], "professions/test.parquet: sha256 differs from manifest"),
    ],
)
def test_publish_refuses(hub, two_versions, tmp_path, setup, args, message):
    state, env = hub
    first, _ = two_versions
    folder = tmp_path / "jobs"
    shutil.copytree(first, folder)
    repo_id = "equita-test/jobs" if setup == "published" else f"equita-test/refused-{setup}"
    if setup == "published" and ("dataset", repo_id) not in state.repos:
        assert equita(env, "publish", str(folder), "--repo-id", repo_id, "--version", V).returncode == 0
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
    done = equita(env, "publish", str(first), "--repo-id", repo_id, "--version", V)
    assert done.returncode == 1
    text = " ".join(done.stderr.split())
    assert "upload failed, nothing was published" in text and "retry the same command" in text
    assert ("503" if failing == "fail_next_commits" else "RemoteProtocolError") in text and "Traceback" not in done.stderr
    assert sorted(p.read_bytes() for p in first.rglob("*") if p.is_file()) == before and verify_manifest(first) == []
    assert state.repos[("dataset", repo_id)].tags == {}
    setattr(state, failing, 0)
    done = equita(env, "publish", str(first), "--repo-id", repo_id, "--version", V)
    assert done.returncode == 0, done.stderr
    assert f"v{V}" in state.repos[("dataset", repo_id)].tags
    # Every request carried the token, and it never appeared in any output.
    commits = [h for m, p, h in state.requests if m == "POST" and "/commit/" in p]
    assert commits and all(h.get("authorization") == f"Bearer {TOKEN}" for h in commits)


def _ensure_published(state, env, folder):
    if f"v{V}" not in getattr(state.repos.get(("dataset", "equita-test/jobs")), "tags", {}):
        assert equita(env, "publish", str(folder), "--repo-id", "equita-test/jobs", "--version", V).returncode == 0


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
    record = json.loads(results_repo.files(results_repo.pulls[0]["head"])[f"jobs/v{V}/smollm2.json"])
    tag_commit = state.repos[("dataset", "equita-test/jobs")].tags[f"v{V}"]
    assert record["dataset"] == {"id": "jobs", "version": V, "hub_repo": "equita-test/jobs", "commit": tag_commit}
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


# -- eval.yaml: the benchmark declaration of each published dataset -----------------------------


@pytest.fixture(scope="module")
def gfg_builds(tmp_path_factory):
    """gfg as anyone builds it (no GFL-it corpus, so no GFL-it configs) and with a GFL-it file."""
    from test_gfg_build import GFLIT

    public = tmp_path_factory.mktemp("gfg-public") / "gfg"
    gfg.build(public, source_dir=UPSTREAM)
    corpus = tmp_path_factory.mktemp("gflit") / "gflit.jsonl"
    corpus.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in GFLIT), encoding="utf-8")
    full = tmp_path_factory.mktemp("gfg-full") / "gfg"
    gfg.build(full, source_dir=UPSTREAM, gfl_it=corpus)
    return public, full


def runner_tasks_of(folder, dataset_id) -> list[dict]:
    """What eval.yaml must declare: the runner's tasks on this dataset whose config and split the folder holds."""
    from equita.runners.tasks import EVAL_TASKS

    return [
        {"id": task.name, "config": task.config, "split": task.split}
        for task in EVAL_TASKS.values() if task.dataset.id == dataset_id and (folder / task.config / f"{task.split}.parquet").is_file()
    ]  # fmt: skip


def snapshot(folder) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("dataset", ["jobs", "itap_at", "gfg"])
def test_the_published_version_declares_the_built_configs_tasks_in_eval_yaml(hub, two_versions, itap_dir, gfg_builds, dataset):
    from equita.runners.data import card_version

    state, env = hub
    folder = {"jobs": two_versions[0], "itap_at": itap_dir, "gfg": gfg_builds[0]}[dataset]
    version = card_version(folder / "README.md")
    repo_id = f"equita-test/{dataset}"
    before = snapshot(folder)
    if dataset == "jobs":
        _ensure_published(state, env, folder)
    else:
        done = equita(env, "publish", str(folder), "--repo-id", repo_id, "--version", version)
        assert done.returncode == 0, done.stderr
        said = " ".join(done.stderr.split())
        assert "eval.yaml declares the tasks" in said and "allow-list" in said
    repo = state.repos[("dataset", repo_id)]
    commit = repo.tags[f"v{version}"]
    files = repo.files(commit)
    # One commit: the built files, eval.yaml with them; the initial commit is its parent.
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(files) == {*manifest["files"], "manifest.json", "eval.yaml", ".gitattributes"}
    assert repo.commits[repo.commits[commit]["parent"]]["message"] == "initial commit"
    declaration = yaml.safe_load(files["eval.yaml"].decode("utf-8"))
    assert list(declaration) == ["name", "description", "tasks"]
    assert declaration["name"] == TASKS[dataset].title
    assert isinstance(declaration["description"], str) and f"version {version}" in declaration["description"]
    expected = runner_tasks_of(folder, dataset)
    assert expected and declaration["tasks"] == expected
    assert all(set(task) == {"id", "config", "split"} and all(isinstance(v, str) for v in task.values()) for task in declaration["tasks"])
    # The folder is as built: eval.yaml went into the commit only.
    assert snapshot(folder) == before and verify_manifest(folder) == [] and not (folder / "eval.yaml").exists()


def test_eval_yaml_declares_a_task_only_where_its_config_was_built(gfg_builds, monkeypatch):
    import dataclasses

    from equita.runners import tasks
    from equita.runners.hub.publish import eval_declaration

    public, full = gfg_builds
    # A runner task on a GFL-it config: declared for a build with the corpus, not for one without.
    gflit = dataclasses.replace(tasks.EVAL_TASKS["gfg-reformulation-neogate"], name="gfg-reformulation-gflit", config="reformulation-gflit")
    monkeypatch.setitem(tasks.EVAL_TASKS, gflit.name, gflit)
    public_ids = [task["id"] for task in eval_declaration(public, "0.1.0")["tasks"]]
    full_ids = [task["id"] for task in eval_declaration(full, "0.1.0")["tasks"]]
    assert not (public / "reformulation-gflit").exists() and (full / "reformulation-gflit" / "test.parquet").is_file()
    assert public_ids == [name for name, task in tasks.EVAL_TASKS.items() if task.dataset.id == "gfg" and name != gflit.name]
    assert full_ids == [*public_ids, gflit.name]
    # Only the tasks of the dataset published: none of another dataset's.
    assert all(tasks.EVAL_TASKS[name].dataset.id == "gfg" for name in full_ids)


def test_a_new_version_replaces_eval_yaml_and_removes_what_it_lacks(hub, gfg_builds, tmp_path, monkeypatch):
    state, env = hub
    _, full = gfg_builds
    repo_id = "equita-test/gfg-shrink"
    assert equita(env, "publish", str(full), "--repo-id", repo_id, "--version", "0.1.0").returncode == 0
    monkeypatch.setattr(gfg, "VERSION", "0.2.0")
    smaller = tmp_path / "gfg"
    gfg.build(smaller, source_dir=UPSTREAM)  # 0.2.0, without GFL-it
    done = equita(env, "publish", str(smaller), "--repo-id", repo_id, "--version", "0.2.0")
    assert done.returncode == 0, done.stderr
    assert "`equita submit --datasets-org ORG` looks for this dataset in ORG/gfg" in " ".join(done.stderr.split())
    repo = state.repos[("dataset", repo_id)]
    old, new = repo.files(repo.tags["v0.1.0"]), repo.files(repo.tags["v0.2.0"])
    gone = {path for path in old if "gflit" in path}
    assert gone and not gone & set(new)  # removed in the new version's commit, still in the old tag
    assert set(new) == {*json.loads((smaller / "manifest.json").read_text())["files"], "manifest.json", "eval.yaml", ".gitattributes"}
    assert repo.commits[repo.tags["v0.2.0"]]["parent"] == repo.tags["v0.1.0"]
    assert yaml.safe_load(new["eval.yaml"])["tasks"] == runner_tasks_of(smaller, "gfg")
    assert "version 0.2.0" in yaml.safe_load(new["eval.yaml"])["description"]


def test_publish_refuses_a_folder_of_no_equita_dataset_before_any_request(hub, tmp_path):
    state, env = hub
    card = "---\n" + yaml.safe_dump({"version": "1.0.0", "configs": [{"config_name": "other", "data_files": [{"split": "test", "path": "other/test.parquet"}]}]}) + "---\n# Other\n"
    write_dataset(tmp_path / "other", {"README.md": card.encode(), "other/test.parquet": b"PAR1"})
    done = equita(env, "publish", str(tmp_path / "other"), "--repo-id", "equita-test/other", "--version", "1.0.0")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "are not those of an equita dataset" in " ".join(done.stderr.split())
    assert ("dataset", "equita-test/other") not in state.repos


def test_submitted_eval_results_name_tasks_that_the_benchmarks_eval_yaml_declares(hub, two_versions, jobs_results):
    """The model-side `.eval_results` entries point at the benchmark: their dataset is the published
    repo and their task_id one of the tasks its eval.yaml (at the entry's revision) declares."""
    from huggingface_hub import parse_eval_result_entries

    state, env = hub
    first, _ = two_versions
    _ensure_published(state, env, first)
    state.create_repo("dataset", "equita-test/results")
    state.create_repo("model", "someone/smol")
    done = equita(env, "submit", str(jobs_results), "--results-repo", "equita-test/results", "--model-repo", "someone/smol", "--datasets-org", "equita-test")
    assert done.returncode == 0, done.stderr
    model_repo = state.repos[("model", "someone/smol")]
    entries = [
        entry for pull in model_repo.pulls for path, data in model_repo.files(pull["head"]).items() if path.startswith(".eval_results/")
        for entry in parse_eval_result_entries(yaml.safe_load(data))
    ]  # fmt: skip
    results = json.loads((jobs_results / "results.json").read_text())
    assert sorted(entry.task_id for entry in entries) == sorted(results["tasks"])
    for entry in entries:
        # Read eval.yaml the way the Hub's client does, at the revision the entry records.
        code = (f"from huggingface_hub import hf_hub_download; print(open(hf_hub_download({entry.dataset_id!r}, 'eval.yaml', "
                f"repo_type='dataset', revision={entry.dataset_revision!r}), encoding='utf-8').read())")  # fmt: skip
        declaration = yaml.safe_load(python(env, code))
        assert entry.dataset_id == "equita-test/jobs"
        assert entry.task_id in {task["id"] for task in declaration["tasks"]}


# -- what a submission may not hold: the paths of the submitter's machine ------------------------

# (text in results.json or in a sample's own field, what is submitted)
LOCAL_PATHS = [
    ("could not load '/scratch/user/models/bert-private'. Use `repo_type` argument", "could not load '<local path>'. Use `repo_type` argument"),
    ("scored with /data/private/jobs.parquet.", "scored with <local path>."),
    ("--bertscore-model=/opt/models/m (6 layers)", "--bertscore-model=<local path> (6 layers)"),
    ("(/data/a/b)", "(<local path>)"),
    ("C:\\Users\\me\\model and C:/Users/me/x and \\\\host\\share\\x", "<local path> and <local path> and <local path>"),
    ("file:///data/models/x ok", "<local path> ok"),
    ("/scratch/x/y: not found", "<local path>: not found"),
    ("/scratch/user/models/bert-private", "local:bert-private"),  # a path alone: its name, as results record local paths
    # Not paths of this machine: URLs, relative paths, words with a slash, placeholders.
    ("see https://huggingface.co/a/b and http://127.0.0.1:8011/v1/models", "see https://huggingface.co/a/b and http://127.0.0.1:8011/v1/models"),
    ("lui/lei e/o 1/2 km/h ./metrics/itap_at_bias ../a/b ~/x/y /tmp", "lui/lei e/o 1/2 km/h ./metrics/itap_at_bias ../a/b ~/x/y /tmp"),
    ("<server>/completions: HTTP 503; [/INST] </s>", "<server>/completions: HTTP 503; [/INST] </s>"),
]  # fmt: skip


@pytest.mark.parametrize("text, submitted", LOCAL_PATHS, ids=[t for t, _ in LOCAL_PATHS])
def test_local_paths_inside_any_text_are_not_submitted(text, submitted):
    from equita.runners.hub.publish import _sample_without_local_paths, _without_local_paths

    assert _without_local_paths({"tasks": {"jobs": {"not_computed": text, "metric": {"options": {"model_type": [text]}}}}}) == {
        "tasks": {"jobs": {"not_computed": submitted, "metric": {"options": {"model_type": [submitted]}}}}
    }
    # A sample's own fields are cleaned; what verification scores again goes as it is.
    sample = {"task": "jobs", "id": 1, "prompt": text, "response": {"text": text}, "note": text}
    assert _sample_without_local_paths(sample) == {**sample, "note": submitted}


@pytest.mark.parametrize("model_id, message", [
    ("..", "model id '..' cannot name a file"),
    ("modello-" + 40 * "è", "model id 'modello-èèèèèèèèèèèèèèèèèèèèèèèèèèèèèèèè'... is 248 characters once written as a file name"),
])  # fmt: skip
def test_a_model_id_that_cannot_name_a_file_is_a_one_line_refusal(model_id, message):
    from equita.runners.hub.publish import _slug

    with pytest.raises(ValueError) as raised:
        _slug(model_id)
    assert message in str(raised.value) and "\n" not in str(raised.value)
