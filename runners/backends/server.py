"""The OpenAI-compatible server backend: vLLM, SGLang, llama.cpp, hosted APIs.

`equita run --server URL --model NAME` sends each request over HTTP, `--concurrency` at a time,
and hands every answer to the runner as it arrives (the runner appends it to the resume cache
at once, so an interrupted or crashed run loses nothing).

- Generation: chat requests through `/chat/completions` (the server applies the model's chat
  template), raw-text requests through `/completions`. Greedy and explicit: `temperature` 0,
  `top_p` 1, top-k off (-1 for vLLM, which would otherwise apply the model's own generation
  defaults; 0 where -1 is refused, as llama.cpp does; none where `top_k` is unknown), a fixed `seed`, the task's token budget
  and stop strings (at most 4 are sent, as the OpenAI API allows; the answer is always cut at
  the first stop string here as well).
- Log-likelihood: `/completions` with `echo`, `logprobs: 1` and the prompt as **token ids**
  (context + continuation), so the boundary between them is exactly the one the in-process
  backend scores. Token ids come from a tokenizer the user names (`--tokenizer`), else from the
  server's `/tokenize` (vLLM, SGLang). Chat-templated contexts need the template rendered here: by
  that tokenizer, or by `/tokenize` with messages.
- A server's prompt log-probabilities are checked before they are used (`probe`): some servers
  return none, and some return wrong ones (llama-cpp-python 0.3's server reads each echoed
  token's value at its own position instead of the previous one). A server that fails is
  refused for the log-likelihood tasks, which are reported as not computed with what was checked
  and what came back; its generation tasks still run.
- Faults: 429 (honouring Retry-After), 5xx, timeouts and dropped connections are retried with
  exponential backoff (urllib3's Retry), a bounded number of times.

The API key is read from an environment variable (`OPENAI_API_KEY`, or the one `--api-key-env`
names) and never reaches a message, a log or a results file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Iterator, Sequence

from ..errors import ModelError
from ..requests import Generate, Loglikelihood, Request, messages, prompt_ids, render_prompt
from .models import ModelInfo

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
MAX_STOP_STRINGS = 4  # the OpenAI API accepts at most 4 stop sequences
SEED = 1234
# An echoed log-probability and the one reported when the same token was generated agree to
# ~1e-5 in float32 and ~1e-2 in bfloat16 with batch-dependent kernels; an off-by-one server is
# off by whole nats.
PROBE_TOLERANCE = 0.1
PROBE_PROMPTS = ("Il chirurgo è una professione da", "La capitale d'Italia è", "Oggi il tempo è")
RETRY_STATUS = (429, 500, 502, 503, 504)


def connect(
    name: str, url: str, revision: str | None = None, api_key_env: str | None = None, tokenizer: str | None = None,
    concurrency: int = 8, timeout: float = 120.0, retries: int = 6, log=print,
) -> "ServerModel":  # fmt: skip
    """A model served at `url` (the OpenAI-compatible base, e.g. http://127.0.0.1:8000/v1)."""
    if not url.startswith(("http://", "https://")):
        raise ModelError(f"--server {url!r}: give the server's base URL, e.g. http://127.0.0.1:8000/v1")
    if concurrency < 1:
        raise ModelError(f"--concurrency {concurrency}: at least 1")
    key_env = api_key_env or DEFAULT_KEY_ENV
    if api_key_env and not os.environ.get(api_key_env):
        raise ModelError(f"--api-key-env {api_key_env}: that environment variable is not set")
    client = Client(url.rstrip("/"), os.environ.get(key_env) or None, timeout, retries)
    served = client.models()
    if served is not None and name not in {entry.get("id") for entry in served}:
        ids = ", ".join(sorted(str(entry.get("id")) for entry in served)[:10])
        raise ModelError(f"--model {name!r}: the server at {client.safe(url)} serves {ids or 'no model'}")
    entry = next((e for e in served or [] if e.get("id") == name), {})
    local = _local_tokenizer(tokenizer) if tokenizer else None
    # Without a revision the served weights cannot be pinned: the fingerprint of what the server
    # says about them stands in (so the cache never mixes two servers' answers), marked unpinned.
    described = json.dumps({k: v for k, v in entry.items() if k not in ("created", "permission")}, sort_keys=True, default=str)
    fingerprint = revision or "unpinned-server:" + hashlib.sha256(f"{name}\n{described}".encode()).hexdigest()[:16]
    info = ModelInfo(
        id=name, source="server", revision=fingerprint, path="server", dtype="unknown", device="server",
        chat_template=True, trust_remote_code=False, parameters=None, backend="openai-server",
    )  # fmt: skip
    log(f"server {client.safe(url)}: model {name} ({entry.get('owned_by', 'unknown owner')}), {concurrency} requests in flight, "
        + (f"tokenizer {tokenizer}" if local else "tokenizer: the server's /tokenize, if it has one"))  # fmt: skip
    return ServerModel(client, info, local, concurrency, log)


def _local_tokenizer(name: str):
    """The tokenizer the user named: a short name (its converted folder), a local folder or a Hub id."""
    from transformers import AutoTokenizer

    from .sources import EMBEDDED, convert_gguf, embedded_gguf

    where = str(convert_gguf(embedded_gguf(name))) if name in EMBEDDED else name
    try:
        return AutoTokenizer.from_pretrained(where)
    except (OSError, ValueError) as error:
        raise ModelError(f"--tokenizer {name!r} cannot be loaded: {error}") from None


class Client:
    """JSON over HTTP with retries; one requests.Session per thread (sessions are not shared across threads)."""

    def __init__(self, base: str, key: str | None, timeout: float, retries: int):
        self.base, self.key, self.timeout, self.retries = base, key, timeout, retries
        # vLLM and SGLang serve /tokenize beside /v1, not under it.
        self.root = base[: -len("/v1")] if base.endswith("/v1") else base
        self._local = threading.local()

    def safe(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            import requests
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            retry = Retry(
                total=self.retries, connect=self.retries, read=self.retries, status=self.retries, other=self.retries,
                backoff_factor=0.5, backoff_max=30, status_forcelist=RETRY_STATUS, allowed_methods=None,
                respect_retry_after_header=True, raise_on_status=False,
            )  # fmt: skip
            session = requests.Session()
            session.mount("http://", HTTPAdapter(max_retries=retry))
            session.mount("https://", HTTPAdapter(max_retries=retry))
            if self.key:
                session.headers["Authorization"] = f"Bearer {self.key}"
            self._local.session = session
        return session

    def call(self, method: str, url: str, payload: dict | None = None, retry: bool = True) -> tuple[int, dict | None, str]:
        """(status, JSON body or None, text) after the retries; ModelError when the server cannot be reached."""
        import requests

        try:
            if retry:
                response = self._session().request(method, url, json=payload, timeout=self.timeout)
            else:
                headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
                response = requests.request(method, url, json=payload, headers=headers, timeout=self.timeout)
        except requests.RequestException as error:
            reason = getattr(error, "args", [None])[0]
            raise ModelError(self.safe(f"{url}: no answer after {self.retries} retries ({type(error).__name__}: {reason})")) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        return response.status_code, body, response.text

    def post(self, path: str, payload: dict, root: bool = False, retry: bool = True) -> dict:
        url = f"{self.root if root else self.base}{path}"
        status, body, text = self.call("POST", url, payload, retry=retry)
        if status != 200 or not isinstance(body, dict):
            raise ServerRefused(status, self.safe(f"{url}: HTTP {status}: {_message(body, text)}"))
        return body

    def models(self) -> list[dict] | None:
        """The served models (GET /models), or None where the server does not list them."""
        status, body, text = self.call("GET", f"{self.base}/models")
        if status in (404, 405):
            return None
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise ModelError(self.safe(f"{self.base}/models: HTTP {status}: {_message(body, text)} (is this an OpenAI-compatible base URL, ending in /v1?)"))
        return [entry for entry in body["data"] if isinstance(entry, dict)]


class ServerRefused(ModelError):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _message(body, text: str) -> str:
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:300]
    return text[:300].strip() or "empty answer"


class ServerModel:
    """A model behind an OpenAI-compatible server, implementing the runner's `Model` protocol."""

    def __init__(self, client: Client, info: ModelInfo, tokenizer, concurrency: int, log=print):
        self.client, self.info, self.tokenizer, self.concurrency, self.log = client, info, tokenizer, concurrency, log
        self._top_k: int | None | bool = False  # False: not settled yet (see _settle_top_k)
        self._top_k_lock = threading.Lock()
        self._server_tokenize: bool | None = None
        self._probe: str | None | bool = False  # False: not run yet; None: passed; str: why it failed
        self._continuations: dict[str, list[int]] = {}  # " uomo" is tokenised once, not once per sentence

    # -- the Model protocol --------------------------------------------------------------------

    def render(self, request: Request) -> str:
        """With a local tokenizer, the text exactly as the model reads it; otherwise the request
        as the server receives it (its messages, or the raw text), since the server applies its
        own template."""
        if self.tokenizer is not None:
            return render_prompt(request, self.tokenizer)
        if not request.chat:
            return request.user
        return json.dumps({"messages": messages(request)}, ensure_ascii=False)

    def cannot(self, request: Request) -> str | None:
        if isinstance(request, Generate):
            return None
        if self.tokenizer is None and not self._has_server_tokenize():
            return ("log-likelihood needs the prompt as token ids, and the server has no /tokenize; "
                    "name the model's tokenizer with --tokenizer (a local folder or Hub id)")  # fmt: skip
        if self._probe is False:
            reason = self.probe()
            # The reason goes into results.json: the server's address (a lab's host) stays out of it.
            self._probe = reason.replace(self.client.base, "<server>").replace(self.client.root, "<server>") if reason else None
            if self._probe:
                self.log(f"log-likelihood tasks not computed: {self._probe}")
        return self._probe

    def answer(self, requests: Sequence[Request], batch_size: int | str = "auto", stats: dict | None = None) -> Iterator[tuple[list[int], list[dict]]]:
        """Answers as they arrive, `concurrency` requests in flight (batch_size is the server's business)."""
        if stats is not None:
            stats["concurrency"] = self.concurrency
        if not requests:
            return
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="equita-server")
        pending = {}
        todo = iter(range(len(requests)))
        try:
            for index in todo:
                pending[pool.submit(self._answer_one, requests[index])] = index
                if len(pending) >= 2 * self.concurrency:
                    break
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    response = future.result()  # a request that failed past its retries ends the run; the answers so far are saved
                    next_index = next(todo, None)
                    if next_index is not None:
                        pending[pool.submit(self._answer_one, requests[next_index])] = next_index
                    yield [index], [response]
        except BaseException:
            # Ctrl-C or a failed request: nothing more is sent, and requests in flight are not
            # waited for (their answers were not saved, so a rerun asks them again).
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    # -- requests --------------------------------------------------------------------------------

    def _answer_one(self, request: Request) -> dict:
        return self._generate(request) if isinstance(request, Generate) else self._loglikelihood(request)

    def _sampling(self, max_tokens: int) -> dict:
        settings = {"model": self.info.id, "max_tokens": max_tokens, "temperature": 0.0, "top_p": 1.0, "seed": SEED, "n": 1}
        top_k = self._settle_top_k()
        if top_k is not None:
            settings["top_k"] = top_k
        return settings

    def _settle_top_k(self) -> int | None:
        """The value that turns top-k off on this server: -1 (vLLM, SGLang), else 0 (llama.cpp
        wants >= 0, and 0 means all tokens), else none (hosted APIs know no top_k). Asked once,
        with one token and no retries, so that a refusal (llama-cpp-python answers it with a 500)
        is not retried as a fault; through chat completions where plain completions are missing."""
        with self._top_k_lock:
            if self._top_k is False:
                self._top_k = None
                asks = [("/completions", {"prompt": "Ciao"}), ("/chat/completions", {"messages": [{"role": "user", "content": "Ciao"}]})]
                for path, prompt in asks:
                    answered = False
                    for value in (-1, 0):
                        payload = {"model": self.info.id, "max_tokens": 1, "temperature": 0.0, "top_k": value, **prompt}
                        try:
                            self.client.post(path, payload, retry=False)
                        except ServerRefused as error:
                            if "top_k" in str(error):
                                answered = True  # the endpoint works; it refuses this value
                            continue
                        except ModelError:
                            continue
                        self._top_k, answered = value, True
                        break
                    if answered:
                        break  # settled on this endpoint (a value, or none when both were refused)
                self.log(f"server sampling: temperature 0, top_p 1, seed {SEED}, " + (f"top_k {self._top_k}" if self._top_k is not None else "no top_k"))
        return self._top_k

    def _generate(self, request: Generate) -> dict:
        payload = self._sampling(request.max_new_tokens)
        if request.stop:
            payload["stop"] = list(request.stop[:MAX_STOP_STRINGS])
        if request.chat:
            body = self.client.post("/chat/completions", {**payload, "messages": messages(request)})
            text = _choice(body, "message", self.client.base).get("content") or ""
        else:
            body = self.client.post("/completions", {**payload, "prompt": request.user})
            text = _choice(body, "text", self.client.base)
        if not isinstance(text, str):
            raise ModelError(f"{self.client.base}: the answer's text is {type(text).__name__}, not a string")
        cut = min((text.find(s) for s in request.stop if s in text), default=len(text))
        return {"text": text[:cut]}

    def _loglikelihood(self, request: Loglikelihood) -> dict:
        context = self._context_ids(request)
        scored = {"logprobs": [], "greedy": []}
        for continuation in request.continuations:
            if continuation not in self._continuations:
                self._continuations[continuation] = self._tokenize(continuation, specials=False)
            tokens = self._continuations[continuation]
            if not tokens:
                raise ModelError(f"continuation {continuation!r} is empty once tokenised")
            values, tops = self._echo(context + tokens)
            picked = values[len(context) : len(context) + len(tokens)]
            scored["logprobs"].append(float(math.fsum(picked)))
            scored["greedy"].append(all(value >= max(top.values()) - 1e-6 for value, top in zip(picked, tops[len(context) : len(context) + len(tokens)])))
        return scored

    def _echo(self, ids: list[int]) -> tuple[list[float], list[dict]]:
        """The server's log-probability of every prompt token after the first, and its top-1 alternatives."""
        body = self.client.post("/completions", {**self._sampling(1), "prompt": ids, "echo": True, "logprobs": 1})
        logprobs = _choice(body, "logprobs", self.client.base)
        values = (logprobs or {}).get("token_logprobs") if isinstance(logprobs, dict) else None
        tops = (logprobs or {}).get("top_logprobs") if isinstance(logprobs, dict) else None
        if not isinstance(values, list) or len(values) < len(ids):
            got = "none" if not isinstance(values, list) else f"{len(values)} values"
            raise ModelError(f"{self.client.base}/completions: echo returned {got} for a prompt of {len(ids)} tokens")
        values = [None if v is None else float(v) for v in values[: len(ids)]]
        # A position without alternatives counts its own token as the best one.
        raw = tops if isinstance(tops, list) else []
        tops = []
        for position, value in enumerate(values):
            top = raw[position] if position < len(raw) and isinstance(raw[position], dict) else {}
            tops.append({k: float(x) for k, x in top.items() if x is not None} or {"": value})
        if any(v is None or not math.isfinite(v) or v > 1e-6 for v in values[1:]):
            raise ModelError(f"{self.client.base}/completions: echoed log-probabilities are not all numbers <= 0")
        return values, tops

    # -- tokens ----------------------------------------------------------------------------------

    def _has_server_tokenize(self) -> bool:
        if self._server_tokenize is None:
            try:
                self.client.post("/tokenize", {"model": self.info.id, "prompt": "prova", "add_special_tokens": False}, root=True)
                self._server_tokenize = True
            except ServerRefused as error:
                if error.status not in (400, 404, 405, 422):
                    raise  # a refused key or a broken server is an error, not a missing endpoint
                self._server_tokenize = False
        return self._server_tokenize

    def _tokenize(self, text: str, specials: bool) -> list[int]:
        if self.tokenizer is not None:
            return self.tokenizer(text, add_special_tokens=specials)["input_ids"]
        body = self.client.post("/tokenize", {"model": self.info.id, "prompt": text, "add_special_tokens": specials}, root=True)
        return _token_list(body, self.client.root)

    def _context_ids(self, request: Loglikelihood) -> list[int]:
        if self.tokenizer is not None:  # exactly as the in-process backend encodes it
            return prompt_ids(request, render_prompt(request, self.tokenizer), self.tokenizer)
        if not request.chat:
            return self._tokenize(request.user, specials=True)
        body = self.client.post("/tokenize", {"model": self.info.id, "messages": messages(request), "add_generation_prompt": True}, root=True)
        return _token_list(body, self.client.root)

    # -- the check -------------------------------------------------------------------------------

    def probe(self) -> str | None:
        """None if the server's echoed log-probabilities are self-consistent, else what failed.

        Generate one token greedily after a prompt and note the log-probability the server gives
        it; then echo the prompt plus that token. There must be one value per prompt token, and
        the last must equal the generated token's (an off-by-one server reads it elsewhere).
        """
        try:
            for prompt in PROBE_PROMPTS:
                ids = self._tokenize(prompt, specials=True)
                try:
                    # No retries: llama-cpp-python answers a token-id prompt it cannot read with a 500.
                    body = self.client.post("/completions", {**self._sampling(1), "prompt": ids, "logprobs": 1}, retry=False)
                except ServerRefused as error:
                    if error.status in (400, 422) or (error.status == 500 and "prompt" in str(error)):
                        return (f"the server refuses a prompt given as token ids ({str(error).splitlines()[0][:200]}); log-likelihood "
                                "needs them, since re-tokenised text would move the boundary between context and continuation")  # fmt: skip
                    raise
                generated = _choice(body, "logprobs", self.client.base)
                text = _choice(body, "text", self.client.base)
                values = generated.get("token_logprobs") if isinstance(generated, dict) else None
                if not isinstance(values, list) or not values or values[0] is None:
                    return f"the server returns no log-probability for a generated token (asked logprobs=1 after {prompt!r})"
                token = self._tokenize(text, specials=False) if isinstance(text, str) else []
                if len(token) != 1:
                    continue  # the generated text does not read back as one token: try another prompt
                echoed, _ = self._echo(ids + token)
                if abs(echoed[len(ids)] - float(values[0])) > PROBE_TOLERANCE:
                    return (f"for {prompt!r} followed by {text!r}, the echoed log-probability of that token is {echoed[len(ids)]:.4f} "
                            f"but the server gave {float(values[0]):.4f} when it generated it (an off-by-one prompt log-probability?)")  # fmt: skip
                return None
        except ModelError as error:
            return f"the log-probability check failed: {error}"
        return "the log-probability check could not run: no generated token read back as a single token"


def _choice(body: dict, field: str, where: str):
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(f"{where}: the answer has no choices")
    value = choices[0].get(field)
    if field == "message":
        return value if isinstance(value, dict) else {}
    return value


def _token_list(body: dict, where: str) -> list[int]:
    tokens = body.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise ModelError(f"{where}/tokenize: the answer has no list of token ids")
    return tokens
