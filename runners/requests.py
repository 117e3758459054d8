"""What a task asks of a model: the two request types every benchmark is written in.

ItaP-AT and Gender-Fair Generation ask for text (`Generate`); ItaP-AT's log-probability variant
and Jobs ask how likely several continuations of one context are (`Loglikelihood`). A request
holds the prompt as the task wrote it; the model renders it (chat template or plain text), and
the rendered text is what the cache key hashes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Generate:
    """Greedy generation of an answer to `user` (after `system`), cut at the first stop string."""

    user: str
    system: str | None = None
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()
    chat: bool = True  # False: `user` is raw text to continue, no chat template (base-model style)


@dataclass(frozen=True)
class Loglikelihood:
    """Log-probability of each continuation right after the context (the prompt as the model sees it).

    With `chat` the context is the rendered chat prompt up to the assistant's turn, so a
    continuation is a whole answer; without it `user` is raw text and a continuation usually
    starts with a space (" uomo").
    """

    user: str
    continuations: tuple[str, ...]
    system: str | None = None
    chat: bool = True


Request = Generate | Loglikelihood
