"""Machinery shared by every dataset builder: upstream sources, tables, parquet, cards, output.

A builder turns upstream files plus the project's own tables into a folder laid out like a
Hub dataset repository: `<config>/test.parquet` files, a `README.md` card whose YAML declares
the configs, and a `manifest.json` with the sha256 of every other file. Builds are
deterministic (same inputs, same bytes) and atomic (the output folder appears complete or
not at all).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2
import pyarrow as pa
import pyarrow.parquet as pq
import requests
import yaml
from datasets import Features

SOURCE_DIR_ENV = "EQUITA_SOURCE_DIR"
CACHE_DIR_ENV = "EQUITA_CACHE_DIR"
SPLIT = "test"


class BuildError(Exception):
    """A problem in a source or a table; the message names the file, the row and the problem."""


@dataclass(frozen=True)
class UpstreamFile:
    """One upstream file, pinned: where it lives, at which revision, with which checksum."""

    repo: str  # "org/name", as on GitHub or the Hub
    path: str  # path inside the repository
    revision: str  # commit the checksum was taken at
    sha256: str | None  # None: not pinned yet (the observed checksum is recorded, not verified)
    url: str  # download address of exactly that revision; "hf://datasets/<repo>" for a Hub dataset file
    license: str

    def mirror_path(self, source_dir: Path) -> Path:
        return Path(source_dir) / self.repo / self.path


def fetch(upstream: UpstreamFile, source_dir: Path | None = None) -> Path:
    """Return a local, checksum-verified copy of an upstream file.

    With `source_dir` (or $EQUITA_SOURCE_DIR) the file is read from a mirror laid out as
    `<source_dir>/<org>/<repo>/<path>`; otherwise it is downloaded once from its pinned URL
    into the cache ($EQUITA_CACHE_DIR, default ~/.cache/equita/sources).
    """
    source_dir = source_dir or os.environ.get(SOURCE_DIR_ENV) or None
    if source_dir is not None:
        path = upstream.mirror_path(Path(source_dir))
        if not path.is_file():
            raise BuildError(f"{path}: not found; the mirror folder must hold {upstream.repo}/{upstream.path}")
    else:
        cache = Path(os.environ.get(CACHE_DIR_ENV, Path.home() / ".cache" / "equita")) / "sources"
        path = cache / (upstream.sha256 or f"{upstream.repo.replace('/', '--')}@{upstream.revision}") / Path(upstream.path).name
        if not path.is_file():
            _download(upstream, path)
    digest = sha256_file(path)
    if upstream.sha256 is not None and digest != upstream.sha256:
        raise BuildError(
            f"{path}: checksum mismatch for {upstream.repo}/{upstream.path}@{upstream.revision[:12]}: "
            f"expected sha256 {upstream.sha256}, got {digest} (corrupted, truncated or another revision)"
        )
    return path


def _download(upstream: UpstreamFile, path: Path) -> None:
    if upstream.url.startswith("hf://datasets/"):
        _download_from_hub(upstream, path)
        return
    try:
        response = requests.get(upstream.url, timeout=60)
        response.raise_for_status()
    except requests.RequestException as error:
        raise BuildError(
            f"{upstream.url}: download failed ({type(error).__name__}); offline, pass --source-dir "
            f"or set ${SOURCE_DIR_ENV} to a mirror folder holding {upstream.repo}/{upstream.path}"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_bytes(response.content)
    partial.replace(path)


def _download_from_hub(upstream: UpstreamFile, path: Path) -> None:
    """A Hub dataset file through huggingface_hub (it handles tokens for gated repos)."""
    from huggingface_hub import hf_hub_download

    try:
        local = hf_hub_download(upstream.repo, upstream.path, repo_type="dataset", revision=upstream.revision)
    except Exception as error:  # offline, gated without a token, missing revision
        raise BuildError(
            f"{upstream.repo}/{upstream.path}@{upstream.revision}: Hub download failed ({type(error).__name__}); offline, pass "
            f"--source-dir or set ${SOURCE_DIR_ENV} to a mirror folder holding {upstream.repo}/{upstream.path}"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(local, path)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def table_path(builder: str, name: str) -> Path:
    """Path of one of a builder's data tables, shipped as package data under builders/tables/."""
    return Path(str(resources.files("equita.builders") / "tables" / builder / name))


def read_tsv(path: Path, columns: list[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a tab-separated table with their line numbers; the header must hold `columns`."""
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header is None:
            raise BuildError(f"{path}:1: empty table")
        missing = [c for c in columns if c not in header]
        if missing:
            raise BuildError(f"{path}:1: missing column(s) {missing}; header is {header}")
        rows = []
        for line, values in enumerate(reader, start=2):
            if not values:
                continue
            if len(values) != len(header):
                raise BuildError(f"{path}:{line}: {len(values)} fields, expected {len(header)} ({header})")
            rows.append((line, dict(zip(header, values))))
    return rows


def read_yaml(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except yaml.YAMLError as error:
        raise BuildError(f"{path}: invalid YAML: {error}") from None


def parquet_bytes(rows: list[dict], features: Features) -> bytes:
    """Rows as parquet, with the `datasets` features in the schema metadata; byte-deterministic."""
    table = pa.Table.from_pylist(rows, schema=features.arrow_schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def features_yaml(features: Features) -> list[dict]:
    """The card's `dataset_info.features`, in the form `datasets` itself writes (lists included)."""
    return features._to_yaml_list()


def dataset_info_yaml(config: str, features: Features, rows: list[dict], parquet: bytes) -> dict:
    num_bytes = pa.Table.from_pylist(rows, schema=features.arrow_schema).nbytes
    return {
        "config_name": config,
        "features": features_yaml(features),
        "splits": [{"name": SPLIT, "num_bytes": num_bytes, "num_examples": len(rows)}],
        "download_size": len(parquet),
        "dataset_size": num_bytes,
    }


def config_files(configs: list[tuple[str, list[dict], Features]], default: str) -> tuple[dict[str, bytes], list[dict], list[dict]]:
    """Parquet files, card `dataset_info` entries and card `configs` entries for (name, rows, features) configs."""
    files, infos, entries = {}, [], []
    for config, rows, features in configs:
        data = parquet_bytes(rows, features)
        files[f"{config}/{SPLIT}.parquet"] = data
        infos.append(dataset_info_yaml(config, features, rows, data))
        entry = {"config_name": config, "data_files": [{"split": SPLIT, "path": f"{config}/{SPLIT}.parquet"}]}
        if config == default:
            entry["default"] = True
        entries.append(entry)
    return files, infos, entries


def render_card(template: str, **context) -> str:
    """Render a dataset card template from dataset_cards/ (shipped as package data)."""
    source = (resources.files("equita.dataset_cards") / template).read_text(encoding="utf-8")
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return environment.from_string(source).render(**context)


def yaml_header(data: dict) -> str:
    return "---\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


def write_dataset(out: Path, files: dict[str, bytes], force: bool = False) -> dict:
    """Write `files` (relative path -> bytes) plus manifest.json into `out`, atomically.

    Everything is written into a temporary sibling folder first and renamed into place only
    when complete, so an error or an interruption never leaves a half-written `out`.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise BuildError(f"{out}: exists and is not empty; pass --force to replace it")
    manifest = {
        "files": {name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)} for name, data in sorted(files.items())}
    }
    files = {**files, "manifest.json": (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()}
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, data in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.replace(retired / out.name)
            staging.replace(out)
            shutil.rmtree(retired)
        else:
            staging.replace(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def verify_manifest(folder: Path) -> list[str]:
    """Problems between a built folder and its manifest (empty when they match)."""
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    problems = []
    listed = manifest["files"]
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"manifest.json"}
    for name in sorted(present - set(listed)):
        problems.append(f"{name}: not in manifest")
    for name, entry in sorted(listed.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: listed in manifest but missing")
        elif sha256_file(path) != entry["sha256"]:
            problems.append(f"{name}: sha256 differs from manifest")
    return problems
