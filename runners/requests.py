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


# Used when a tokenizer has no chat template: the system text, a blank line, the user text and
# an Italian answer cue. Documented in the README; results record which format was used.
PLAIN_TEMPLATE = "{system}\n\n{user}\nRisposta:"
PLAIN_TEMPLATE_NO_SYSTEM = "{user}\nRisposta:"


def messages(request: Request) -> list[dict]:
    """The chat messages of a request: its system text (if any), then the user's."""
    return ([{"role": "system", "content": request.system}] if request.system else []) + [{"role": "user", "content": request.user}]


def has_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def render_prompt(request: Request, tokenizer) -> str:
    """The exact text a model with `tokenizer` reads: the chat template with the assistant's turn
    opened; for raw-text requests, `user` itself; for tokenizers without a template, plain text."""
    if not request.chat:
        return request.user
    if has_template(tokenizer):
        return tokenizer.apply_chat_template(messages(request), add_generation_prompt=True, tokenize=False)
    if request.system:
        return PLAIN_TEMPLATE.format(system=request.system, user=request.user)
    return PLAIN_TEMPLATE_NO_SYSTEM.format(user=request.user)


def prompt_ids(request: Request, text: str, tokenizer) -> list[int]:
    """Token ids of a rendered prompt. A rendered chat template already holds its special tokens;
    plain text gets the tokenizer's own (BOS for most models)."""
    return tokenizer(text, add_special_tokens=not (request.chat and has_template(tokenizer)))["input_ids"]


def continuation_ids(tokenizer, continuation: str) -> list[int]:
    """A continuation's token ids, tokenised on its own (a leading space stays in the token)."""
    return tokenizer(continuation, add_special_tokens=False)["input_ids"]
