"""Publishing built datasets to the Hugging Face Hub: one commit per version, tagged v<version>.

Everything goes through `huggingface_hub` (endpoint from HF_ENDPOINT, token from the usual login
or HF_TOKEN). A token never reaches a message: errors are rewritten without it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ...builders.common import path_part, verify_manifest
from ..data import DatasetError, card_version


class PublishError(Exception):
    """Publishing refused or failed; the message says why and what to do."""


def _token_free(text: str) -> str:
    from huggingface_hub import get_token

    for secret in {get_token(), os.environ.get("HF_TOKEN")} - {None, ""}:
        text = text.replace(secret, "***")
    return text


def _network_errors() -> tuple[type[BaseException], ...]:
    """What a failed request raises: the Hub's HTTP errors and the transport's own (a dropped connection)."""
    from huggingface_hub.errors import HfHubHTTPError

    try:  # huggingface_hub 2.x talks through httpx2; older releases through httpx
        import httpx2 as transport
    except ImportError:
        import httpx as transport
    # RuntimeError: huggingface_hub's wrapper around a failed LFS upload.
    return (HfHubHTTPError, transport.HTTPError, OSError, RuntimeError)


def check_repo_id(repo_id: str, option: str) -> str:
    """An ORG/NAME the Hub accepts, checked before any request (huggingface_hub's rule, our message)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise PublishError(f"{option} {repo_id!r}: expected ORG/NAME")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PublishError(f"{option} {repo_id!r}: not a valid Hub repository id ({str(error).splitlines()[0]})") from None
    return repo_id


def _fail(what: str, error: Exception) -> PublishError:
    cause = error.__cause__  # huggingface_hub wraps a failed LFS upload in a RuntimeError
    reason = f"{type(error).__name__}: {error}" + (f" ({type(cause).__name__}: {cause})" if cause is not None else "")
    return PublishError(_token_free(f"{what}: {reason}"))


# The benchmark declaration each published dataset repo carries at its root, `eval.yaml`, in the
# format of the Hub's eval results (https://huggingface.co/docs/hub/eval-results, "Registering a
# Benchmark", as of huggingface/hub-docs docs/hub/eval-results.md):
#
#   name: ...                  # the benchmark's name
#   description: ...           # what it measures
#   evaluation_framework: ...  # an identifier from the Hub's list of frameworks
#   tasks:
#     - id: ...                # the task id that `.eval_results/*.yaml` entries name as `dataset.task_id`
#                                (the docs' example comments it "the HF dataset ID", but their model
#                                side calls `task_id` "ID of the Task, as defined in the dataset's
#                                eval.yaml": a task id it is, one per task)
#       config: ...            # the dataset config it reads
#       split: ...             # the dataset split it reads
#
# A task's id is the runner's task name (what `--tasks` takes), the same `task_id` that
# `submit_results` writes with `EvalResultEntry(dataset_id="<org>/<dataset id>", task_id=<name>)`.
EVAL_DECLARATION = "eval.yaml"


def _card_header(card: Path) -> dict:
    """The card's YAML front matter (`card_version` has already read it: it parses, safely)."""
    import yaml

    match = re.match(r"---\n(.*?)\n---\n", card.read_text(encoding="utf-8"), re.DOTALL)
    header = yaml.safe_load(match.group(1)) if match else None
    return header if isinstance(header, dict) else {}


def _built_splits(folder: Path, header: dict) -> dict[str, set[str]]:
    """config -> the splits the folder holds: the card's configs whose data files are all in the build."""
    listed = set(json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["files"])
    built: dict[str, set[str]] = {}
    for entry in header.get("configs") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("config_name"), str):
            continue
        paths: dict[str, list] = {}
        for data in entry.get("data_files") or []:
            if isinstance(data, dict) and isinstance(data.get("split"), str):
                path = data.get("path")
                paths.setdefault(data["split"], []).extend(path if isinstance(path, list) else [path])
        held = {split for split, files in paths.items() if files and all(isinstance(f, str) and f in listed for f in files)}
        if held:
            built[entry["config_name"]] = held
    return built


def eval_declaration(folder: Path, version: str) -> dict:
    """The `eval.yaml` of a built folder (a mapping, written with yaml.safe_dump); see `_declare`."""
    return _declare(folder, version)[1]


def _declare(folder: Path, version: str):
    """(the folder's TaskSpec, its `eval.yaml`): the runner's tasks that read this dataset, and of
    them only those whose config and split the folder holds (a gfg build without the GFL-it corpus
    has no GFL-it configs, so it declares no task on them).

    The folder's dataset is the one whose declared configs include all of its card's configs (a
    build's card lists only configs of its own dataset, and no two datasets share one).
    """
    from ...builders import TASKS
    from ..tasks import EVAL_TASKS

    folder = Path(folder)
    header = _card_header(folder / "README.md")
    names = {entry.get("config_name") for entry in header.get("configs") or [] if isinstance(entry, dict)}
    specs = [spec for spec in TASKS.values() if names and names <= set(spec.configs)]
    if len(specs) != 1:
        raise PublishError(
            f"{folder}: its card's configs ({', '.join(sorted(map(str, names))) or 'none'}) are not those of an equita dataset "
            f"({', '.join(sorted(TASKS))}), so its tasks cannot be declared in {EVAL_DECLARATION}; publish a folder built by `equita build`"
        )  # fmt: skip
    spec = specs[0]
    built = _built_splits(folder, header)
    tasks = [task for task in EVAL_TASKS.values() if task.dataset.id == spec.id and task.split in built.get(task.config, ())]
    if not tasks:
        raise PublishError(f"{folder}: it holds no config that an equita task reads, so {EVAL_DECLARATION} would declare no task; rebuild it")
    what = "; ".join(f"{task.name}: {task.description} (config {task.config}, split {task.split}, metric {task.metric})" for task in tasks)
    return spec, {
        "name": spec.title,
        "description": (
            f"{spec.title}, equita edition, version {version}: an Italian bias benchmark. Tasks, by id: {what}. "
            f"Run them with `equita run --model MODEL --tasks TASK_ID`; `equita submit --model-repo` writes the model's "
            f".eval_results entries with these task ids."
        ),
        # `evaluation_framework` is left out: the Hub checks it against its own list of frameworks
        # (huggingface.js, packages/tasks/src/eval.ts, EVALUATION_FRAMEWORKS), where equita is not,
        # and a value outside that list fails the push-time validation. The docs do not say the
        # field is required; allow-listed benchmarks exist without it.
        "tasks": [{"id": task.name, "config": task.config, "split": task.split} for task in tasks],
    }


def _eval_yaml(declaration: dict) -> bytes:
    import yaml

    return yaml.safe_dump(declaration, sort_keys=False, allow_unicode=True).encode("utf-8")


# Files an older version may hold that a new one replaces; what the new version lacks is removed.
_VERSION_FILES = ["*.parquet", "*.md", "*.json", EVAL_DECLARATION]


def publish_dataset(folder: Path, repo_id: str, version: str, log=print) -> tuple[str, str]:
    """Upload a built dataset folder and its `eval.yaml` in one commit and tag it v<version>;
    returns (commit sha, tag).

    Refuses a folder whose files differ from its manifest, a version that is not the card's, a
    folder of no equita dataset, and a tag that already exists (tags are never moved: a published
    version stays reproducible). The folder itself is left as built: `eval.yaml` is added in the
    commit only.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
    from huggingface_hub.utils import filter_repo_objects

    check_repo_id(repo_id, "--repo-id")
    folder = Path(folder)
    if not (folder / "manifest.json").is_file() or not (folder / "README.md").is_file():
        raise PublishError(f"{folder}: not a folder built by `equita build` (README.md or manifest.json missing)")
    problems = verify_manifest(folder)
    if problems:
        raise PublishError(f"{folder}: files differ from manifest.json ({'; '.join(problems[:5])}); rebuild it before publishing")
    try:
        declared = card_version(folder / "README.md")
    except DatasetError as error:
        raise PublishError(str(error)) from None
    if declared != version:
        raise PublishError(f"{folder}: its card declares version {declared}, not {version}; publish the version you built")
    spec, declaration = _declare(folder, version)  # before any request: a folder that cannot declare its tasks creates nothing
    files = sorted(json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["files"]) + ["manifest.json"]
    if EVAL_DECLARATION in files:
        raise PublishError(f"{folder}: holds its own {EVAL_DECLARATION}; equita writes it from the task declarations, rebuild the folder")
    operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(folder / name)) for name in files]
    operations.append(CommitOperationAdd(path_in_repo=EVAL_DECLARATION, path_or_fileobj=_eval_yaml(declaration)))
    tag = f"v{version}"
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        existing = {ref.name for ref in api.list_repo_refs(repo_id, repo_type="dataset").tags}
    except _network_errors() as error:
        raise _fail(f"{repo_id}: cannot create or read the repository", error) from None
    if tag in existing:
        raise PublishError(f"{repo_id}: tag {tag} already exists and is never moved; bump the dataset version to publish changes")
    try:
        # One commit holds the whole version (create_commit, not upload_folder: with hf_xet installed
        # upload_folder may split a folder into several commits); files of an older version that
        # this one lacks are removed in the same commit. .gitattributes stays, as upload_folder keeps it.
        added = {operation.path_in_repo for operation in operations}
        present = api.list_repo_files(repo_id, repo_type="dataset")
        stale = [path for path in filter_repo_objects(present, allow_patterns=_VERSION_FILES) if path not in added and path != ".gitattributes"]
        commit = api.create_commit(
            repo_id, repo_type="dataset", commit_message=f"equita: publish {tag}",
            operations=[*(CommitOperationDelete(path_in_repo=path) for path in stale), *operations],
        )  # fmt: skip
    except _network_errors() as error:
        raise _fail(f"{repo_id}: upload failed, nothing was published (a commit is all or nothing); the local folder is unchanged, retry the same command", error) from None
    try:
        api.create_tag(repo_id, tag=tag, revision=commit.oid, repo_type="dataset", tag_message=f"equita dataset {tag}")
    except _network_errors() as error:
        raise _fail(f"{repo_id}: commit {commit.oid} uploaded but tagging {tag} failed; tag it with `huggingface-cli tag`, or retry", error) from None
    log(f"published {folder} to {repo_id}: commit {commit.oid}, tag {tag}")
    log(f"{repo_id}: {EVAL_DECLARATION} declares the tasks {', '.join(task['id'] for task in declaration['tasks'])} "
        "(the Hub lists the dataset as a benchmark only once it admits it to its allow-list)")  # fmt: skip
    if repo_id.split("/")[1] != spec.id:
        log(f"note: `equita submit --datasets-org ORG` looks for this dataset in ORG/{spec.id}, not in {repo_id}")
    return commit.oid, tag


def publish_metric(folder: Path, repo_id: str, log=print) -> str:
    """Create (or update) a Gradio Space holding an evaluate module, so `evaluate.load(repo_id)` works.

    evaluate fetches `<name>.py` from the Space, with <name> the repository's name, so the module
    file is uploaded under that name and the Space's app.py loads the repository id. The module's
    sibling files (`from .classifier import ...`) are uploaded next to it under their own names:
    evaluate fetches each file the module imports directly.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    check_repo_id(repo_id, "--repo-id")
    folder = Path(folder)
    module = folder.name
    name = repo_id.split("/")[-1]
    if not name.isidentifier():
        raise PublishError(f"--repo-id {repo_id}: evaluate imports the module as {name}.py, so the name must be a Python identifier (use _ not -)")
    files = {f"{module}.py": f"{name}.py", "README.md": "README.md", "requirements.txt": "requirements.txt"}
    missing = [source for source in [*files, "app.py"] if not (folder / source).is_file()]
    if missing:
        raise PublishError(f"{folder}: not an evaluate module folder; missing {', '.join(missing)}")
    siblings = sorted(p.name for p in folder.glob("*.py") if p.name not in (f"{module}.py", "app.py", "__init__.py"))
    clash = [s for s in siblings if s == f"{name}.py"]
    if clash:
        raise PublishError(f"--repo-id {repo_id}: the module would be uploaded as {name}.py, the name of its sibling file {clash[0]}; choose another name")
    files.update({sibling: sibling for sibling in siblings})
    operations = [CommitOperationAdd(path_in_repo=target, path_or_fileobj=str(folder / source)) for source, target in files.items()]
    app = f'import evaluate\nfrom evaluate.utils import launch_gradio_widget\n\nmodule = evaluate.load("{repo_id}")\nlaunch_gradio_widget(module)\n'
    operations.append(CommitOperationAdd(path_in_repo="app.py", path_or_fileobj=app.encode()))
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
        commit = api.create_commit(repo_id, repo_type="space", operations=operations, commit_message=f"equita: publish metric {module}")
    except _network_errors() as error:
        raise _fail(f"{repo_id}: publishing the metric Space failed; nothing local changed, retry the same command", error) from None
    log(f"published {folder} to the Space {repo_id}: commit {commit.oid}")
    return commit.oid


def _slug(text: str) -> str:
    """A file name for a model id, one to one: "org/name" and "org__name" never share a file.
    Letters, digits, "." and "-" stay; every other character (the "/" too) is written %XX.
    A ValueError names an id that cannot be a file name ("..", or over 200 characters so written)."""
    from urllib.parse import quote

    slug = quote(text, safe="-.")
    if len(slug) > 200:
        raise ValueError(f"model id {text[:40]!r}... is {len(slug)} characters once written as a file name (%XX for other characters than letters, digits, '-' and '.'), over 200")
    return path_part(slug, "model id")


# What replaces a local path inside a text (a message, a description, an option) in a submission.
LOCAL_PATH = "<local path>"
# An absolute path inside a text: POSIX with two parts at least (/a/b), Windows (C:\a, C:/a, \\host\share),
# file:// URLs. Not a URL's path (https://host/a/b: after ':' or a letter), a relative one (./a/b, ~/a)
# or a fraction or "e/o" (after a letter or digit); it ends at a space or a quote.
_PATH_IN_TEXT = re.compile(
    r"file://[^\s'\"`<>|]+"
    r"|(?<![\w.:/~\\\]>])/[^\s/'\"`<>|]+(?:/[^\s'\"`<>|]*)+"
    r"|(?<![\w\\])(?:[A-Za-z]:[\\/]|\\\\[^\s\\'\"`<>|]+\\)[^\s'\"`<>|]*"
)


def _local_path_out(match: re.Match) -> str:
    path = match.group(0)
    end = path.rstrip(".,;:)")  # a sentence's full stop after the path is the sentence's
    return LOCAL_PATH + path[len(end) :]


def _without_local_paths(value):
    """A results record with no local path left in it: what is submitted is public.

    A text that is a path (a results file written before paths were recorded shareably) becomes
    `cache:...` / `local:<name>`; inside a longer text the home folder becomes `~` and any other
    absolute path `<local path>` (LOCAL_PATH).
    """
    from ..backends.sources import shareable

    if isinstance(value, dict):
        return {key: _without_local_paths(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_local_paths(item) for item in value]
    if isinstance(value, str):
        if os.path.isabs(value) and not any(c.isspace() for c in value):  # a path alone, not a message that starts with one
            return shareable(value)
        home = str(Path.home())
        if len(home) > 1:
            value = value.replace(home, "~")
        return _PATH_IN_TEXT.sub(_local_path_out, value)
    return value


# The fields of a sample that verification reads: they go as they are (the leaderboard scores them
# again, the prompt is hashed into its key). They come from the dataset and the model, not from
# the run's machine; any other field is cleaned of local paths like the results.
SCORED_SAMPLE_FIELDS = ("task", "id", "group", "prompt", "prompt_sha256", "response", "metric_input", "continuations")


def _sample_without_local_paths(sample: dict) -> dict:
    return {key: value if key in SCORED_SAMPLE_FIELDS else _without_local_paths(value) for key, value in sample.items()}


def _open_pull_with_title(api, repo_id: str, repo_type: str, title: str):
    for discussion in api.get_repo_discussions(repo_id, repo_type=repo_type, discussion_type="pull_request", discussion_status="open"):
        if discussion.title == title:
            return discussion
    return None


def _dataset_commit(api, datasets_org: str, dataset: dict) -> str:
    """The Hub commit of the dataset version the results were computed on, checked byte for byte.

    A local build is accepted only when the published tag holds the same manifest, so a
    submission always points at data anyone can download.
    """
    from huggingface_hub import hf_hub_download

    repo = f"{datasets_org}/{dataset['id']}"
    tag = f"v{dataset['version']}"
    try:
        refs = {ref.name: ref.target_commit for ref in api.list_repo_refs(repo, repo_type="dataset").tags}
        if tag not in refs:
            raise PublishError(f"{repo} has no tag {tag}: publish the dataset first (`equita publish`), so the results can point at it")
        if dataset["location"] == "hub":
            # A Hub copy is read at its tag: the recorded commit must be the tag's (an all-zero one is not).
            if dataset["revision"] != refs[tag]:
                raise PublishError(f"results.json: dataset {dataset['id']} revision {dataset['revision']!r} is not the commit of {repo}@{tag} ({refs[tag]})")
            return refs[tag]
        manifest = Path(hf_hub_download(repo, "manifest.json", repo_type="dataset", revision=refs[tag], endpoint=api.endpoint))
    except _network_errors() as error:
        raise _fail(f"{repo}: cannot read the published dataset", error) from None
    import hashlib

    published = "manifest-sha256:" + hashlib.sha256(manifest.read_bytes()).hexdigest()
    if published != dataset["revision"]:
        raise PublishError(f"{repo}@{tag} differs from the dataset these results were computed on ({dataset['repo']}); rerun on the published version")
    return refs[tag]


def submit_results(results_dir: Path, results_repo: str, model_repo: str | None = None, datasets_org: str = "equita", log=print) -> list[str]:
    """Open pull requests with a run's results: one JSON per model and dataset version in the central
    results dataset, with the samples of its tasks next to it, and, optionally,
    `.eval_results/*.yaml` in the model's repo. Never pushes directly; an identical open
    submission is not opened twice. Returns the pull-request URLs or references.

    The results are verified first (`equita verify`, on the published datasets of `datasets_org`):
    a task whose scores do not follow from its samples is refused; one that cannot be checked
    here is submitted, said in the log and in the record's "verification"."""
    import hashlib

    import yaml
    from huggingface_hub import CommitOperationAdd, EvalResultEntry, HfApi, eval_result_entries_to_yaml

    from ..results.contract import ResultsError, headline, load_results, validate_results
    from ..results.verify import MISMATCH, NOT_VERIFIABLE, VerifyError, read_samples, verify_results
    from ..run import strict

    check_repo_id(results_repo, "--results-repo")
    if model_repo is not None:
        check_repo_id(model_repo, "--model-repo")
    if "/" in datasets_org:
        raise PublishError(f"--datasets-org {datasets_org!r}: an organisation name, without '/'")
    check_repo_id(f"{datasets_org}/x", "--datasets-org")  # an organisation: ORG/NAME's first half
    try:
        results = load_results(Path(results_dir))
    except ResultsError as error:
        raise PublishError(str(error)) from None
    problems = validate_results(results)
    if problems:
        raise PublishError(f"{results_dir}/results.json does not follow the results schema: {'; '.join(problems[:5])}")
    checked = results  # verified as written; what is published has the local paths taken out
    results = _without_local_paths(results)
    # The chat template is the tokenizer's text, not this machine's: verification renders every prompt with it.
    if "chat_format" in checked["settings"]:
        results["settings"]["chat_format"] = checked["settings"]["chat_format"]
    from ...builders import TASKS

    # What becomes a repository path is checked against what it must be, not trusted.
    known = {spec.id: spec for spec in TASKS.values()}
    for name, task in results["tasks"].items():
        dataset = task["dataset"]
        if dataset["id"] not in known:
            raise PublishError(f"{results_dir}/results.json: tasks.{name}.dataset.id {dataset['id']!r} is not an equita dataset ({', '.join(sorted(known))})")
        if not re.fullmatch(r"\d+\.\d+\.\d+", str(dataset["version"])):
            raise PublishError(f"{results_dir}/results.json: tasks.{name}.dataset.version {dataset['version']!r} is not a version X.Y.Z")
        if task["results"] is not None:
            try:
                key, value = headline(task)
            except KeyError as error:
                raise PublishError(f"{results_dir}/results.json: tasks.{name}.results has no {error.args[0]!r}, its headline") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise PublishError(f"{results_dir}/results.json: tasks.{name}.results.{key} is {value!r}, not a number")
    try:
        model_slug = _slug(results["model"]["id"])
    except ValueError as error:
        raise PublishError(f"{results_dir}/results.json: {error}; nothing was submitted") from None
    try:  # after the fields that become repository paths are checked
        samples = read_samples(Path(results_dir))
    except VerifyError as error:
        raise PublishError(str(error)) from None
    api = HfApi()
    by_dataset: dict[tuple[str, str], dict] = {}
    for name, task in results["tasks"].items():
        key = (task["dataset"]["id"], task["dataset"]["version"])
        by_dataset.setdefault(key, {"dataset": task["dataset"], "tasks": {}})["tasks"][name] = task
    opened = []
    try:
        api.repo_info(results_repo, repo_type="dataset")
    except _network_errors() as error:
        raise _fail(f"{results_repo}: the results dataset is not reachable", error) from None
    # Before any pull request: every score must follow from the samples, on the data the submission points at.
    try:
        verification = verify_results(checked, samples, datasets=datasets_org, log=log)
    except VerifyError as error:
        raise PublishError(f"{results_dir}: {error}") from None
    statuses = {name: entry["status"] for name, entry in verification["tasks"].items()}
    refused = [name for name, status in statuses.items() if status == MISMATCH]
    if refused:
        first = verification["tasks"][refused[0]]["problems"][0]
        others = f" (and {len(refused) - 1} more tasks)" if len(refused) > 1 else ""
        raise PublishError(f"{results_dir}: task {refused[0]} does not verify: {first}{others}; nothing was submitted (details: `equita verify {results_dir}`)")
    for name, status in statuses.items():
        if status == NOT_VERIFIABLE:
            log(f"{name}: not verifiable here ({verification['tasks'][name]['problems'][0]}); submitted, recorded as not verifiable")
    home = str(Path.home())
    # Every dataset's commit before any pull request: one that cannot be pinned opens none of them.
    commits = {key: _dataset_commit(api, datasets_org, group["dataset"]) for key, group in by_dataset.items()}
    for (dataset_id, version), group in by_dataset.items():
        commit = commits[(dataset_id, version)]
        record = {key: results[key] for key in ("schema", "created", "equita", "model", "settings")}
        record["dataset"] = {"id": dataset_id, "version": version, "hub_repo": f"{datasets_org}/{dataset_id}", "commit": commit}
        record["tasks"] = group["tasks"]
        record["verification"] = {"equita": verification["equita"], "tasks": {name: statuses[name] for name in group["tasks"]}}
        # What is scored goes as it is: the leaderboard scores it again, and scrubbing would change
        # prompts and answers. It holds no path by construction; one that names the home folder is refused.
        lines = [json.dumps(strict(_sample_without_local_paths(s)), ensure_ascii=False) + "\n" for s in samples if s["task"] in group["tasks"]]
        samples_content = "".join(lines).encode()
        if len(home) > 1 and home in samples_content.decode():
            raise PublishError(f"{results_dir}/samples.jsonl: samples of {dataset_id} hold your home folder's path ({home}); they are published as they are, so nothing was submitted")
        samples_file = f"{model_slug}.samples.jsonl"
        record["samples"] = {"file": samples_file, "sha256": hashlib.sha256(samples_content).hexdigest()}
        content = (json.dumps(record, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()
        digest = hashlib.sha256(content).hexdigest()[:12]
        title = f"equita results: {results['model']['id']} on {dataset_id} v{version} [{digest}]"
        try:
            existing = _open_pull_with_title(api, results_repo, "dataset", title)
            if existing is not None:
                log(f"{results_repo}: already submitted as pull request #{existing.num}; not opening another")
                opened.append(f"{results_repo}#{existing.num}")
            else:
                info = api.create_commit(
                    results_repo, repo_type="dataset", create_pr=True, commit_message=title,
                    operations=[CommitOperationAdd(path_in_repo=f"{dataset_id}/v{version}/{model_slug}.json", path_or_fileobj=content),
                                CommitOperationAdd(path_in_repo=f"{dataset_id}/v{version}/{samples_file}", path_or_fileobj=samples_content)],
                    commit_description=f"Results of `{results['model']['id']}` (revision {results['model']['revision']}) on {dataset_id} v{version}, dataset commit {commit}.",
                )  # fmt: skip
                log(f"{results_repo}: opened {info.pr_url}")
                opened.append(info.pr_url)
            if model_repo:
                entries = [
                    EvalResultEntry(dataset_id=f"{datasets_org}/{dataset_id}", task_id=name, value=headline(task)[1], dataset_revision=commit,
                                    notes=f"equita {results['equita']['version']}, metric {task['metric']['name']} ({headline(task)[0]})")
                    for name, task in group["tasks"].items() if task["results"] is not None
                ]  # fmt: skip
                body = yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True).encode()
                model_title = f"equita eval results: {dataset_id} v{version} [{hashlib.sha256(body).hexdigest()[:12]}]"
                existing = _open_pull_with_title(api, model_repo, "model", model_title)
                if existing is not None:
                    log(f"{model_repo}: already submitted as pull request #{existing.num}; not opening another")
                    opened.append(f"{model_repo}#{existing.num}")
                    continue
                info = api.create_commit(
                    model_repo, create_pr=True, commit_message=model_title,
                    operations=[CommitOperationAdd(path_in_repo=f".eval_results/equita-{dataset_id}.yaml", path_or_fileobj=body)],
                )  # fmt: skip
                log(f"{model_repo}: opened {info.pr_url}")
                opened.append(info.pr_url)
        except _network_errors() as error:
            raise _fail("submission failed; the local results are unchanged, retry the same command (already opened pull requests are not duplicated)", error) from None
    return opened
