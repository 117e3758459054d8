"""Publishing built datasets to the Hugging Face Hub: one commit per version, tagged v<version>.

Everything goes through `huggingface_hub` (endpoint from HF_ENDPOINT, token from the usual login
or HF_TOKEN). A token never reaches a message: errors are rewritten without it.
"""

from __future__ import annotations

import os
from pathlib import Path

from equita.builders.common import verify_manifest
from equita.runners.data import card_version


class PublishError(Exception):
    """Publishing refused or failed; the message says why and what to do."""


def _token_free(text: str) -> str:
    from huggingface_hub import get_token

    for secret in {get_token(), os.environ.get("HF_TOKEN")} - {None, ""}:
        text = text.replace(secret, "***")
    return text


def _fail(what: str, error: Exception) -> PublishError:
    return PublishError(_token_free(f"{what}: {type(error).__name__}: {error}"))


def publish_dataset(folder: Path, repo_id: str, version: str, log=print) -> tuple[str, str]:
    """Upload a built dataset folder in one commit and tag it v<version>; returns (commit sha, tag).

    Refuses a folder whose files differ from its manifest, a version that is not the card's, and
    a tag that already exists (tags are never moved: a published version stays reproducible).
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    if not (folder / "manifest.json").is_file() or not (folder / "README.md").is_file():
        raise PublishError(f"{folder}: not a folder built by `equita build` (README.md or manifest.json missing)")
    problems = verify_manifest(folder)
    if problems:
        raise PublishError(f"{folder}: files differ from manifest.json ({'; '.join(problems[:5])}); rebuild it before publishing")
    declared = card_version(folder / "README.md")
    if declared != version:
        raise PublishError(f"{folder}: its card declares version {declared}, not {version}; publish the version you built")
    tag = f"v{version}"
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        existing = {ref.name for ref in api.list_repo_refs(repo_id, repo_type="dataset").tags}
    except HfHubHTTPError as error:
        raise _fail(f"{repo_id}: cannot create or read the repository", error) from None
    if tag in existing:
        raise PublishError(f"{repo_id}: tag {tag} already exists and is never moved; bump the dataset version to publish changes")
    try:
        # One commit holds the whole version; files of an older version that this one lacks are removed.
        commit = api.upload_folder(
            folder_path=str(folder), repo_id=repo_id, repo_type="dataset", commit_message=f"equita: publish {tag}",
            delete_patterns=["*.parquet", "*.md", "*.json"],
        )  # fmt: skip
    except HfHubHTTPError as error:
        raise _fail(f"{repo_id}: upload failed, nothing was published (a commit is all or nothing); the local folder is unchanged, retry the same command", error) from None
    try:
        api.create_tag(repo_id, tag=tag, revision=commit.oid, repo_type="dataset", tag_message=f"equita dataset {tag}")
    except HfHubHTTPError as error:
        raise _fail(f"{repo_id}: commit {commit.oid} uploaded but tagging {tag} failed; tag it with `huggingface-cli tag`, or retry", error) from None
    log(f"published {folder} to {repo_id}: commit {commit.oid}, tag {tag}")
    return commit.oid, tag
