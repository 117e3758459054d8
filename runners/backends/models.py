"""The model interface every backend implements, and `load_model`, which picks the backend.

A backend answers the runner's two request types (`equita.runners.requests`): `Generate` and
`Loglikelihood`. The runner uses nothing else than the `Model` protocol below, so a backend is a
class with these four members:

- `transformers` (`equita.runners.backends.hf`): the model loaded in this process (short name, GGUF file,
  checkpoint folder or Hub id);
- `openai-server` (`equita.runners.backends.server`): any server that speaks the OpenAI HTTP protocol
  (vLLM, SGLang, llama.cpp, hosted APIs), with `--server URL`;
- a scripted fake for the tests that check the runner's plumbing (`tests/fake_model.py`).

Torch is imported only by the `transformers` backend, when a model is loaded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterator, Protocol, Sequence

from ..errors import ModelError
from ..requests import Request
from .sources import EMBEDDED, cache_root, shareable

__all__ = ["EMBEDDED", "Model", "ModelError", "ModelInfo", "cache_root", "load_model", "shareable"]


@dataclass(frozen=True)
class ModelInfo:
    """What results.json records about the model: enough to load the same weights again."""

    id: str  # the Hub id or short name the user passed; for a local file or folder, its name only
    source: str  # "hub", "local", "gguf" or "embedded"
    revision: str  # Hub commit, or sha256 of the GGUF file, or a fingerprint of the local folder
    path: str  # where the weights were loaded from, as `shareable` writes it
    dtype: str
    device: str
    chat_template: bool
    trust_remote_code: bool
    parameters: int | None  # None where a server does not say
    backend: str = "transformers"  # "transformers" (in this process) or "openai-server"

    def as_dict(self) -> dict:
        return asdict(self)


class Model(Protocol):
    """What the runner needs of a model."""

    info: ModelInfo

    def render(self, request: Request) -> str:
        """The exact text the model reads for `request` (recorded in samples.jsonl; its sha256 keys the cache)."""

    def cannot(self, request: Request) -> str | None:
        """Why this model cannot answer requests like `request` (the task is then reported as not
        computed, with this reason), or None."""

    def answer(self, requests: Sequence[Request], batch_size: int | str, stats: dict | None = None) -> Iterator[tuple[list[int], list[dict]]]:
        """Answer `requests`, yielding (indices, responses) as they are ready, so that the runner
        saves each one at once. Responses: {"text"} for Generate; {"logprobs", "greedy"} (one entry
        per continuation) for Loglikelihood. `batch_size` is a number of rows or "auto"; `stats`,
        when given, receives what the backend wants recorded in the task's timings (the batch
        size it used, its slot utilisation)."""


def load_model(
    name: str, revision: str | None = None, device: str = "auto", dtype: str = "auto", trust_remote_code: bool = False,
    server: dict | None = None,
) -> Model:
    """The backend for `name`: a server model when `server` holds its settings (url, api_key_env,
    tokenizer, concurrency, timeout), else the model loaded in this process."""
    if server is not None:
        from .server import connect

        return connect(name, revision=revision, **server)
    from .hf import load_transformers

    return load_transformers(name, revision, device, dtype, trust_remote_code)
