"""What a task asks of a model: the two request types every benchmark is written in.

ItaP-AT and Gender-Fair Generation ask for text (`Generate`); ItaP-AT's log-probability variant
and Jobs ask how likely several continuations of one context are (`Loglikelihood`). A request
holds the prompt as the task wrote it; the model renders it (chat template or plain text), and
the rendered text is what the cache key hashes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import signal
import threading
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


def chat_format(model) -> dict | None:
    """How `model` turns a chat request into its prompt, as results.json records it (settings.chat_format),
    so that `equita verify` can render every prompt again and compare it whole:

    - {"format": "chat_template", "template", "template_sha256", "special_tokens"}: the tokenizer's chat
      template, rendered as transformers renders it (the in-process backend, a server with --tokenizer);
    - {"format": "plain"}: a tokenizer without a template (PLAIN_TEMPLATE);
    - {"format": "messages"}: a server without --tokenizer, which applies its own template; the prompt
      recorded is the messages it was sent;
    - None: a backend that does not say (the tests' scripted model).
    """
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        return {"format": "messages"} if model.info.backend == "openai-server" else None
    if not has_template(tokenizer):
        return {"format": "plain"}
    template = tokenizer.get_chat_template()
    return {"format": "chat_template", "template": template, "template_sha256": hashlib.sha256(template.encode()).hexdigest(),
            "special_tokens": dict(tokenizer.special_tokens_map)}  # fmt: skip


class CannotRender(Exception):
    """The prompt cannot be rebuilt from what results.json recorded; the message says why."""


# A chat template renders one prompt in well under a millisecond. One from a results file that takes
# longer (nested loops over range()) is stopped, so that verifying a submission cannot hang the leaderboard.
RENDER_SECONDS = 0.5


@contextlib.contextmanager
def _time_limit(seconds: float):
    """TimeoutError in the block after `seconds` (an alarm: the main thread on POSIX; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def stop(signum, frame):
        raise TimeoutError(f"took over {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def render_recorded(request: Request, recorded: dict | None) -> str:
    """The prompt of `request` rebuilt from a results file's `settings.chat_format` (see chat_format),
    exactly as `render_prompt` wrote it in the run. Raw-text requests need nothing recorded.
    The record comes from someone else's file: it is checked, and the template runs in
    transformers' sandboxed jinja environment, as apply_chat_template runs it."""
    if not request.chat:
        return request.user
    if recorded is None:
        raise CannotRender("the run recorded no chat format (settings.chat_format): results of an older equita, "
                           "or a backend that does not say how it renders a chat prompt")  # fmt: skip
    if not isinstance(recorded, dict):
        raise CannotRender(f"settings.chat_format is not an object (a {type(recorded).__name__})")
    form = recorded.get("format")
    if form == "messages":
        return json.dumps({"messages": messages(request)}, ensure_ascii=False)
    if form == "plain":
        if request.system:
            return PLAIN_TEMPLATE.format(system=request.system, user=request.user)
        return PLAIN_TEMPLATE_NO_SYSTEM.format(user=request.user)
    if form != "chat_template":
        raise CannotRender(f"settings.chat_format.format {form!r:.40} is none of chat_template, plain, messages")
    template, special = recorded.get("template"), recorded.get("special_tokens")
    if not isinstance(template, str) or recorded.get("template_sha256") != hashlib.sha256(template.encode()).hexdigest():
        raise CannotRender("settings.chat_format.template is not the text its template_sha256 names")
    # apply_chat_template gives the template the tokenizer's named special tokens (bos_token, ...), nothing else.
    if not isinstance(special, dict) or not all(isinstance(k, str) and re.fullmatch(r"[a-z]+_token", k) and isinstance(v, str) for k, v in special.items()):
        raise CannotRender("settings.chat_format.special_tokens is not a map of token names (bos_token, ...) to text")
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        with _time_limit(RENDER_SECONDS):
            rendered, _ = render_jinja_template(conversations=[messages(request)], chat_template=template, add_generation_prompt=True, **special)
    except Exception as error:  # noqa: BLE001 - the template is someone else's code: whatever it raises, it cannot be rendered
        raise CannotRender(f"the recorded chat template cannot be rendered ({type(error).__name__}: {str(error)[:200]})") from None
    return rendered[0]


def prompt_ids(request: Request, text: str, tokenizer) -> list[int]:
    """Token ids of a rendered prompt. A rendered chat template already holds its special tokens;
    plain text gets the tokenizer's own (BOS for most models)."""
    return tokenizer(text, add_special_tokens=not (request.chat and has_template(tokenizer)))["input_ids"]


def continuation_ids(tokenizer, continuation: str) -> list[int]:
    """A continuation's token ids, tokenised on its own (a leading space stays in the token)."""
    return tokenizer(continuation, add_special_tokens=False)["input_ids"]
