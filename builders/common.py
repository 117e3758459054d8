"""Machinery shared by every dataset builder: upstream sources, tables, parquet, cards, output.

A builder turns upstream files plus the project's own tables into a folder laid out like a
Hub dataset repository: `<config>/test.parquet` files, a `README.md` card whose YAML declares
the configs, and a `manifest.json` with the sha256 of every other file. Builds are
deterministic (same inputs, same bytes) and atomic (the output folder appears complete or
not at all).
"""

from __future__ import annotations

import csv
import ctypes
import errno
import glob
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
import pyarrow as pa
import pyarrow.parquet as pq
import requests
import yaml

if TYPE_CHECKING:  # the schema type only: `datasets` loads when a build writes parquet
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


def read_text(path: Path) -> str:
    """A text file read strictly: it must exist, be a file, be UTF-8 and hold no NUL byte.

    Every source a builder reads goes through here, so that a wrong path, a binary file or a
    file in another encoding is one line naming the file (and the line), never a traceback.
    """
    path = Path(path)
    if not path.exists():
        raise BuildError(f"{path}: not found")
    if not path.is_file():
        raise BuildError(f"{path}: not a file (a folder?)")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BuildError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise BuildError(f"{path}:{line}: not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); save the file as UTF-8") from None
    nul = text.find("\0")
    if nul >= 0:
        raise BuildError(f"{path}:{text.count(chr(10), 0, nul) + 1}: NUL byte in a text file (binary or damaged)")
    return text.removeprefix("\ufeff")  # a byte-order mark is not part of the header


def parse_json(text: str, path: Path | str, first_line: int = 1):
    """JSON text (NaN allowed, as P-AT needs); an error names the file's line, deep nesting is refused.

    `first_line`: where `text` starts in the file (a JSON-lines record is parsed alone).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise BuildError(f"{path}:{first_line + error.lineno - 1}: not valid JSON ({error.msg}, column {error.colno})") from None
    except RecursionError:
        raise BuildError(f"{path}:{first_line}: JSON nested too deeply") from None


def read_tsv(path: Path, columns: list[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a tab-separated table with their line numbers; the header must hold `columns`."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t")
    header = next(reader, None)
    if header is None:
        raise BuildError(f"{path}:1: empty table")
    missing = [c for c in columns if c not in header]
    if missing:
        raise BuildError(f"{path}:1: missing column(s) {missing}; header is {header}")
    rows = []
    try:
        for values in reader:
            line = reader.line_num
            if not values:
                continue
            if len(values) != len(header):
                raise BuildError(f"{path}:{line}: {len(values)} fields, expected {len(header)} ({header})")
            rows.append((line, dict(zip(header, values))))
    except csv.Error as error:
        raise BuildError(f"{path}:{reader.line_num}: {error}") from None
    return rows


def read_yaml(path: Path) -> dict:
    try:
        return yaml.safe_load(read_text(path))
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


STAGING = ".staging-"  # hidden siblings being written: .<name>.staging-<pid>-<random>
PREVIOUS = "previous"  # inside a staging folder: the build it is replacing, until the swap is done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_staging(target: Path) -> list[Path]:
    """Remove the staging folders of `target` left by processes that are no longer running.

    A build or a model conversion killed outright (SIGKILL, a power cut) cannot clean up after
    itself; its folder carries its pid, so the next run knows it is abandoned. If the kill came
    between the two renames of a replacement, the previous build is put back first.
    """
    target = Path(target)
    removed = []
    for path in target.parent.glob(f".{glob.escape(target.name)}{STAGING}*"):
        pid = path.name[len(target.name) + 1 + len(STAGING) :].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        previous = path / PREVIOUS
        if not target.exists() and (previous / "manifest.json").is_file():
            previous.replace(target)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def staging_dir(target: Path) -> Path:
    """A fresh hidden sibling of `target` to write into, after sweeping abandoned ones."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_staging(target)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}{STAGING}{os.getpid()}-", dir=target.parent))


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # an old kernel or a file system without it
        return False
    raise OSError(error, os.strerror(error), str(second))


def path_part(name, what: str) -> str:
    """`name`, read from a file, as one path component: no separator, no "." or "..", no control
    character, not absolute. Every name from a file becomes a path only through this function."""
    if not isinstance(name, str) or not name or name in (".", "..") or len(name) > 200:
        raise ValueError(f"{what} {name!r} cannot name a file")
    if "/" in name or "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name) or os.path.isabs(name) or ":" in name:
        raise ValueError(f"{what} {name!r} cannot name a file (separators, ':' and control characters are not allowed)")
    return name


def is_build(folder: Path) -> bool:
    """Whether `folder` holds an equita build: a manifest.json that lists its files."""
    try:
        manifest = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(manifest, dict) and isinstance(manifest.get("files"), dict)


def file_in_the_way(out: Path) -> str | None:
    """Why no folder can be at `out` (it is a file, lies below one, or cannot even be looked up:
    a name too long for the file system, a folder that may not be entered), or None."""
    out = Path(out)
    try:
        if out.exists() and not out.is_dir():
            return "is a file, not a folder"
        for parent in out.parents:
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file, so no folder can be made below it"
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            return f"cannot be used: {error.strerror} (one of its names has {max(len(os.fsencode(part)) for part in out.parts)} bytes)"
        return f"cannot be used ({error.strerror or error})"
    return None


def _unwritable(out: Path, error: OSError) -> BuildError:
    """The one-line error for a build that cannot be written to `out`, with what to do about it."""
    reason = error.strerror or str(error)
    if error.errno == errno.EBUSY:
        hint = "; it is in use, a mount point perhaps, which cannot be replaced: build into a folder inside it"
    elif error.errno == errno.EROFS:
        hint = "; choose an --out on a writable file system"
    elif error.errno == errno.ENAMETOOLONG:
        hint = "; choose a shorter --out (the build is staged under a sibling name about 30 characters longer)"
    elif error.errno == errno.ENOSPC:
        hint = "; nothing was replaced, free some space and build again"
    else:
        hint = ""
    return BuildError(f"{out}: cannot be written ({reason}){hint}")


def check_output_folder(out: Path, force: bool) -> None:
    """Refuse an --out that a build must not replace; every message says what to do instead."""
    out = Path(out)
    blocked = file_in_the_way(out)
    if blocked:
        raise BuildError(f"{out}: {blocked}; choose another --out")
    if Path.cwd().resolve() == out.resolve() or out.resolve() in Path.cwd().resolve().parents:
        raise BuildError(f"{out}: is the current folder or contains it; build into a subfolder (e.g. --out {out / 'build'})")
    if out.is_dir() and any(out.iterdir()):
        if not is_build(out):
            # --force replaces a build, never a folder of other things (a user's notes were lost).
            raise BuildError(f"{out}: exists, is not empty and is not an equita build (no valid manifest.json); refusing to replace it, "
                             "even with --force: choose another --out, or empty it yourself")  # fmt: skip
        if not force:
            raise BuildError(f"{out}: exists and is not empty; pass --force to replace it")


def write_dataset(out: Path, files: dict[str, bytes], force: bool = False) -> dict:
    """Write `files` (relative path -> bytes) plus manifest.json into `out`, atomically.

    Everything is written into a hidden sibling first. A new `out` appears by one rename; an
    existing build (only a build: see `check_output_folder`) is swapped with the new one in one
    atomic exchange where the system has it, so `out` is never missing; elsewhere the old build
    waits inside the staging folder until the new one is in place, and `sweep_staging` puts it
    back if the process died in between.
    """
    out = Path(out)
    try:
        check_output_folder(out, force)
        return _write_dataset(out, files)
    except OSError as error:  # a read-only file system, a busy mount point, a full disk, a name too long
        raise _unwritable(out, error) from None


def _write_dataset(out: Path, files: dict[str, bytes]) -> dict:
    manifest = {
        "files": {name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)} for name, data in sorted(files.items())}
    }
    files = {**files, "manifest.json": (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()}
    staging = staging_dir(out)
    build = staging / "build"
    try:
        for name, data in files.items():
            target = build / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        make_readable(build)
        if not out.exists():
            build.replace(out)
        elif _exchange(build, out):
            pass  # `out` is the new build; `build` now holds the old one, removed with the staging folder
        else:
            out.replace(staging / PREVIOUS)
            build.replace(out)
    except BaseException:
        if not out.exists() and (staging / PREVIOUS).is_dir():
            (staging / PREVIOUS).replace(out)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return manifest


def make_readable(folder: Path) -> None:
    """Builds and converted models are data for everyone: readable by all (mkdtemp makes 0700 folders)."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def verify_manifest(folder: Path) -> list[str]:
    """Problems between a built folder and its manifest (empty when they match).

    The manifest is read as untrusted: a name in it is looked up only as a relative path made of
    plain components (no "..", no absolute path), so a crafted manifest reads nothing outside.
    """
    folder = Path(folder)
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        return [f"manifest.json: cannot be read ({type(error).__name__})"]
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict):
        return ["manifest.json: no 'files' mapping"]
    problems = []
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"manifest.json"}
    for name in sorted(present - set(listed)):
        problems.append(f"{name}: not in manifest")
    for name, entry in sorted(listed.items()):
        try:
            path = folder.joinpath(*(path_part(part, "manifest entry") for part in name.split("/")))
        except ValueError as error:
            problems.append(f"manifest.json: {error}")
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            problems.append(f"{name}: manifest entry has no sha256")
        elif not path.is_file():
            problems.append(f"{name}: listed in manifest but missing")
        elif sha256_file(path) != entry["sha256"]:
            problems.append(f"{name}: sha256 differs from manifest")
    return problems
