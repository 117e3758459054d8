"""A scripted model that implements the runner's `Model` protocol, for tests of the runner's
plumbing (resume, cache, merging, reports), not of a model: it answers at once, the same way
every time, and counts what it was asked. Real-model behaviour is tested on SmolLM2."""

from __future__ import annotations

import hashlib
from typing import Callable, Iterator, Sequence

from equita.runners.backends.models import ModelInfo
from equita.runners.requests import Generate, Request


def _fraction(*parts: str) -> float:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def a_word_of_the_prompt(request: Generate) -> str:
    """A default script: some answers pick a word of the prompt, others say nothing useful."""
    words = request.user.replace(".", " ").replace(",", " ").split()
    return words[int(_fraction(request.user) * len(words))] if words else ""


class ScriptedModel:
    def __init__(self, script: Callable[[Generate], str] = a_word_of_the_prompt, name: str = "scripted", interrupt_after: int | None = None):
        self.info = ModelInfo(id=name, source="fake", revision="scripted-1", path="fake", dtype="none", device="none",
                              chat_template=True, trust_remote_code=False, parameters=0, backend="fake")  # fmt: skip
        self.script = script
        self.interrupt_after = interrupt_after  # raise KeyboardInterrupt after this many batches
        self.asked: list[int] = []  # requests per answer() call

    def render(self, request: Request) -> str:
        return f"<system>{request.system or ''}</system><user>{request.user}</user>" if request.chat else request.user

    def cannot(self, request: Request) -> str | None:
        return None

    def answer(self, requests: Sequence[Request], batch_size: int | str = 16, stats: dict | None = None) -> Iterator[tuple[list[int], list[dict]]]:
        self.asked.append(len(requests))
        batch_size = 16 if batch_size == "auto" else batch_size
        for number, start in enumerate(range(0, len(requests), batch_size)):
            if self.interrupt_after is not None and number == self.interrupt_after:
                raise KeyboardInterrupt
            indices = list(range(start, min(start + batch_size, len(requests))))
            yield indices, [self._one(requests[i]) for i in indices]

    def _one(self, request: Request) -> dict:
        if isinstance(request, Generate):
            return {"text": self.script(request)}
        logprobs = [-0.5 - 10 * _fraction(request.user, continuation) for continuation in request.continuations]
        return {"logprobs": logprobs, "greedy": [value == max(logprobs) for value in logprobs]}
