"""Where a task's dataset comes from: a local build, the Hub, or a fresh local build.

`--datasets DIR` reads folders made by `equita build` (DIR/<dataset id>/, or DIR itself when
it is named after the dataset);
`--datasets ORG` reads ORG/<dataset id> from the Hub at the tag v<version>. Without it, the
runner uses the copy built earlier into the cache, else the Hub copy of the project's repo,
else builds one into the cache from the upstream sources (a mirror with --source-dir).
Every copy's version must be the one this equita declares: results are only comparable on the
same data.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from ..builders.common import BuildError, is_build, verify_manifest
from ..builders.spec import TaskSpec
from .backends.sources import cache_root


class DatasetError(Exception):
    """A dataset that cannot be found, is damaged, or has another version than the task expects."""


@dataclass(frozen=True)
class DatasetInfo:
    """Provenance recorded in results.json."""

    id: str
    repo: str  # Hub repo id, or the local folder
    location: str  # "local" (given folder), "cache" (built by the runner) or "hub"
    config: str
    split: str
    version: str
    revision: str  # Hub commit sha, or "manifest-sha256:<hex>" of a local build

    def as_dict(self) -> dict:
        return asdict(self)


def card_version(card: Path) -> str | None:
    """The `version` field of a dataset card's YAML front matter (safe YAML: tags are refused)."""
    try:
        text = Path(card).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DatasetError(f"{card}: not UTF-8 (byte offset {error.start})") from None
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not match:
        return None
    try:
        header = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f":{where.line + 2}" if where is not None else ""  # +2: the opening --- is line 1
        raise DatasetError(f"{card}{line}: the card's YAML header cannot be read ({getattr(error, 'problem', None) or error})") from None
    if not isinstance(header, dict):
        raise DatasetError(f"{card}: the card's YAML header is not a mapping")
    return str(header["version"]) if "version" in header else None


def _check_local(spec: TaskSpec, folder: Path) -> str:
    """Check a built folder (version, manifest) and return its revision string."""
    if not (folder / "README.md").is_file() or not (folder / "manifest.json").is_file():
        raise DatasetError(f"{folder}: not a dataset built by `equita build` (README.md or manifest.json missing)")
    version = card_version(folder / "README.md")
    if version != spec.version:
        raise DatasetError(
            f"{folder}: dataset version {version} but this equita's {spec.cli_name} tasks expect {spec.version}; "
            f"rebuild it with `equita build {spec.cli_name} --out {folder} --force`"
        )
    problems = verify_manifest(folder)
    if problems:
        raise DatasetError(f"{folder}: files differ from manifest.json ({'; '.join(problems[:5])}); rebuild it")
    return "manifest-sha256:" + hashlib.sha256((folder / "manifest.json").read_bytes()).hexdigest()


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def _from_hub(spec: TaskSpec, repo: str) -> tuple[str, str]:
    """(repo, commit sha) of the Hub copy at tag v<version>; DatasetError when unreachable."""
    from huggingface_hub import HfApi, hf_hub_download

    tag = f"v{spec.version}"
    try:
        sha = HfApi().dataset_info(repo, revision=tag).sha
        card = Path(hf_hub_download(repo, "README.md", repo_type="dataset", revision=sha))
    except Exception as error:  # network, missing repo or tag: all mean "no Hub copy"
        raise DatasetError(f"{repo}@{tag} is not reachable on the Hub: {type(error).__name__}: {error}") from None
    version = card_version(card)
    if version != spec.version:
        raise DatasetError(f"{repo}@{tag}: its card says version {version}, expected {spec.version}")
    return repo, sha


def locate(spec: TaskSpec, datasets: str | None, source_dir: Path | None, log=print) -> tuple[str, str, str]:
    """(what load_dataset reads, location, revision) for `spec`, following the order in the module doc."""
    if datasets is not None:
        folder = Path(datasets).expanduser()
        if not datasets.strip():
            raise DatasetError("--datasets is empty: give a folder of `equita build` outputs or a Hub organisation")
        if folder.exists() and not folder.is_dir():
            raise DatasetError(f"--datasets {datasets}: is a file; give a folder of `equita build` outputs or a Hub organisation")
        if folder.is_dir():
            # DIR/<id>/ (a folder of builds), or DIR itself when it is named after the dataset.
            own = folder / spec.id
            if own.is_dir():
                folder = own
            elif folder.resolve().name != spec.id:
                raise DatasetError(
                    f"--datasets {datasets}: no {own}; build it with `equita build {spec.cli_name} --out {own}`, "
                    f"or leave --datasets out to use the cache"
                )
            return str(folder), "local", _check_local(spec, folder)
        if re.fullmatch(r"[A-Za-z0-9][\w.-]*", datasets) and not datasets.startswith("."):
            repo, sha = _from_hub(spec, f"{datasets}/{spec.id}")
            return repo, "hub", sha
        raise DatasetError(f"--datasets {datasets!r}: no such folder, and not a Hub organisation name")
    built = cache_root() / "datasets" / f"{spec.id}-{spec.version}"
    if built.is_dir():
        try:
            return str(built), "cache", _check_local(spec, built)
        except DatasetError as error:
            log(f"cached build unusable, rebuilding: {error}")
    if not _hub_offline():
        try:
            repo, sha = _from_hub(spec, spec.hub_repo)
            return repo, "hub", sha
        except DatasetError as error:
            log(f"no Hub copy ({error}); building {spec.cli_name} locally")
    if built.is_dir() and not is_build(built):
        # Equita's own cache folder, damaged (no manifest): safe to clear; --force replaces only builds.
        shutil.rmtree(built)
    try:
        spec.build_to(built, source_dir=source_dir, force=True)
    except BuildError as error:
        raise DatasetError(f"cannot build {spec.cli_name}: {error}") from None
    return str(built), "cache", _check_local(spec, built)


def spread(n_rows: int, limit: int | None) -> list[int]:
    """`limit` row indices evenly spaced over the dataset (every subdataset gets a share), or all."""
    if limit is None or limit >= n_rows:
        return list(range(n_rows))
    if limit < 1:
        raise ValueError(f"--limit must be at least 1, not {limit}")
    return sorted({(i * n_rows) // limit for i in range(limit)})


def load_rows(config: str, split: str, where: str, location: str, revision: str) -> list[dict]:
    from datasets import load_dataset

    try:
        if location == "hub":
            dataset = load_dataset(where, config, split=split, revision=revision)
        else:
            dataset = load_dataset(where, config, split=split)
    except ValueError as error:  # unknown config or split: datasets names the valid ones
        raise DatasetError(f"{where}: {error}") from None
    return dataset.to_list()
