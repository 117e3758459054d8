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
  return none, some return wrong ones (llama-cpp-python 0.3's server reads each echoed
  token's value at its own position instead of the previous one), some return malformed ones. A
  server that fails is refused for the log-likelihood tasks, which are reported as not computed
  with what was checked and what came back; its generation tasks still run.
- Faults: 429 (honouring Retry-After, up to RETRY_AFTER_MAX or the request timeout, whichever is
  smaller), 5xx, timeouts and dropped connections are retried with exponential backoff, a bounded
  number of times (the check included). Redirects are refused, not followed: the answers of
  another address would be recorded under this server's fingerprint.
- Bounds: each attempt has a wall-clock deadline (`--request-timeout`, at most
  MAX_REQUEST_TIMEOUT): the body is read in pieces with the clock checked between them, so a
  server that trickles bytes cannot hold a request. (Connecting and the first byte of the headers
  share that deadline; the rest of the headers are read by http.client, a line at a time, so a
  server that trickles its headers is bounded per socket read only.) An answer weighs at most
  BYTES_PER_TOKEN per token of its budget: a server that ignores `max_tokens` is refused, and its
  50 MB answer never reaches the cache; an answer's text longer than CHARS_PER_TOKEN per token is
  cut to that.
- Ctrl-C: requests run on daemon threads that stop between reads and retries once the run ends,
  so an interrupted run exits at once instead of waiting for the requests in flight.

Secrets: the API key is read from an environment variable (`OPENAI_API_KEY`, or the one
`--api-key-env` names); it and a password in the URL never reach a message, a log or a results
file, not even when a server copies them into its answer (they are written `***`). The server's
address (scheme, host and port) is written `<server>` in every message, so that none reaches
results.json; only the first console line names the URL the user gave (its password as `***`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import queue
import re
import threading
import time
from typing import Callable, Iterator, Sequence
from urllib.parse import unquote

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
# A log-probability up to this far above 0 is float rounding, read as 0; beyond it, a broken server.
ROUNDING = 1e-6
PROBE_PROMPTS = ("Il chirurgo è una professione da", "La capitale d'Italia è", "Oggi il tempo è")
RETRY_STATUS = (429, 500, 502, 503, 504)
REDIRECT_STATUS = (301, 302, 303, 307, 308)
# An hour: longer than any one answer takes; `inf` or 1e12 would overflow the clock arithmetic.
MAX_REQUEST_TIMEOUT = 3600.0
# A server's Retry-After is honoured up to a minute (or the request timeout, if shorter): a 429
# asking for an hour must not stall the run for hours.
RETRY_AFTER_MAX = 60.0
BACKOFF_FACTOR, BACKOFF_MAX = 0.5, 30.0  # waits of 0, 1, 2, 4 ... 30 s between retries
# What an answer of n tokens may weigh. One token decodes to at most a few dozen characters (the
# longest in common vocabularies are runs of spaces or punctuation), CHARS_PER_TOKEN is generous;
# in JSON a character takes at most 6 bytes (\uXXXX), so BYTES_PER_TOKEN covers a token's text,
# its log-probability and its top alternative together. BODY_OVERHEAD is the rest of the JSON
# (ids, usage, finish reasons).
CHARS_PER_TOKEN = 128
BYTES_PER_TOKEN = 1024
BODY_OVERHEAD = 64 * 1024
OTHER_BODY_MAX = 8 * 2**20  # /models and /tokenize have no token budget: a fixed bound
READ_CHUNK = 64 * 1024
SECRET_MIN_LENGTH = 8  # a shorter API key is a placeholder, not looked for in answers


def connect(
    name: str, url: str, revision: str | None = None, api_key_env: str | None = None, tokenizer: str | None = None,
    concurrency: int = 8, timeout: float = 120.0, retries: int = 6, log=print,
) -> "ServerModel":  # fmt: skip
    """A model served at `url` (the OpenAI-compatible base, e.g. http://127.0.0.1:8000/v1)."""
    if concurrency < 1:
        raise ModelError(f"--concurrency {concurrency}: at least 1")
    if not 0 < timeout <= MAX_REQUEST_TIMEOUT:  # NaN fails too
        raise ModelError(f"--request-timeout {timeout:g}: give 0.1 to {MAX_REQUEST_TIMEOUT:g} seconds")
    key_env = api_key_env or DEFAULT_KEY_ENV
    if api_key_env and not os.environ.get(api_key_env):
        raise ModelError(f"--api-key-env {api_key_env}: that environment variable is not set")
    client = Client(url, os.environ.get(key_env) or None, timeout, retries)
    served = client.models()
    if served is not None and name not in {entry.get("id") for entry in served}:
        ids = ", ".join(sorted(str(entry.get("id")) for entry in served)[:10])
        raise ModelError(client.scrub(f"--model {name!r}: the server at {client.shown(client.base)} serves {ids or 'no model'}"))
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
    # The console shows which server this is (the user's own argument), with its password as ***.
    log(client.scrub(f"server {_without_password(url)}: model {name} ({entry.get('owned_by', 'unknown owner')}), {concurrency} requests in flight, "
                     + (f"tokenizer {tokenizer}" if local else "tokenizer: the server's /tokenize, if it has one"), keep_address=True))  # fmt: skip
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


def _without_password(url: str) -> str:
    """`url` with the password of a user:password@ part written ***."""
    return re.sub(r"(//[^/@:]*:)[^/]*@", r"\1***@", url)


def _parse_server(url: str):
    """The URL split by urllib3, or a one-line error naming what is wrong with it."""
    from urllib3.exceptions import LocationParseError
    from urllib3.util import parse_url

    shown = _without_password(url)
    if not url.startswith(("http://", "https://")):
        raise ModelError(f"--server {shown!r}: give the server's base URL, e.g. http://127.0.0.1:8000/v1")
    try:
        parsed = parse_url(url)
    except LocationParseError:
        parsed = None
    if parsed is None or not parsed.host:
        raise ModelError(f"--server {shown!r}: not a valid URL (no host, or a malformed host or port); give the server's base URL, e.g. http://127.0.0.1:8000/v1")
    return parsed


class _Late(Exception):
    """An attempt passed its wall-clock deadline."""


class _Stopped(Exception):
    """The run ended (Ctrl-C, or another request failed): nothing more is sent."""


class _TooLong(ModelError):
    """An answer over its byte cap."""


class Client:
    """JSON over HTTP with retries and deadlines; one requests.Session per thread (sessions are not shared across threads)."""

    def __init__(self, url: str, key: str | None, timeout: float, retries: int):
        parsed = _parse_server(url)
        self.base, self.key, self.timeout, self.retries = url.rstrip("/"), key, timeout, retries
        # vLLM and SGLang serve /tokenize beside /v1, not under it.
        self.root = self.base[: -len("/v1")] if self.base.endswith("/v1") else self.base
        self.origin = "/".join(self.base.split("/", 3)[:3])  # scheme://[user:password@]host[:port], as given
        self.retry_after_max = min(RETRY_AFTER_MAX, timeout)
        # What messages must not show: the key, and a URL's password as written, decoded and as
        # the Basic credentials requests sends for it (a proxy may copy that header into an answer).
        self.secrets = [key] if key else []
        if parsed.auth and ":" in parsed.auth:
            user, password = parsed.auth.split(":", 1)
            basic = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
            self.secrets += [s for s in (password, unquote(password), basic) if len(s) >= 3]
        self.secrets.sort(key=len, reverse=True)
        # How a message may name the server: the origin as given, without the credentials, host:port,
        # and urllib3's `host='...', port=N` (longest first, so that no part of one is left behind).
        host = parsed.host.strip("[]")
        self.addresses = sorted({self.origin, f"{parsed.scheme}://{parsed.netloc}", parsed.netloc, f"[{host}]", host}, key=len, reverse=True)
        self._local = threading.local()

    def shown(self, url: str) -> str:
        """A URL of this server as messages show it: <server>/v1/completions."""
        return "<server>" + url[len(self.origin) :] if url.startswith(self.origin) else self.scrub(url)

    def scrub(self, text: str, keep_address: bool = False) -> str:
        """`text` with the secrets written *** and (unless `keep_address`) the server's address <server>."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        if keep_address:
            return text
        text = re.sub(r"host=('[^']*'|\S+?), port=\d+", "<server>", text)  # urllib3: HTTPConnectionPool(host='h', port=8000)
        for address in self.addresses:
            text = re.sub(r"(?<![\w.-])" + re.escape(address) + r"(?![\w-])", "<server>", text)
        return text

    def hide_secrets(self, answer: str) -> str:
        """An answer with the secrets written ***. Placeholder keys (vLLM's docs use "EMPTY") are
        not secrets, and replacing a short word would change answers: only secrets of
        SECRET_MIN_LENGTH characters or more are looked for."""
        for secret in self.secrets:
            if len(secret) >= SECRET_MIN_LENGTH:
                answer = answer.replace(secret, "***")
        return answer

    def stop_with(self, stop: threading.Event) -> None:
        """Requests from this thread end (between reads, or between retries) once `stop` is set."""
        self._local.stop = stop

    def _stopped(self) -> bool:
        stop = getattr(self._local, "stop", None)
        return stop is not None and stop.is_set()

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = requests.Session()  # its adapters retry nothing: call() does, within bounds
            if self.key:
                session.headers["Authorization"] = f"Bearer {self.key}"
            self._local.session = session
        return session

    def call(self, method: str, url: str, payload: dict | None = None, cap: int = OTHER_BODY_MAX, retry: bool = True,
             final: Callable[[int, dict | None, str], bool] | None = None) -> tuple[int, dict | None, str]:  # fmt: skip
        """(status, JSON body or None, text) after the retries (none unless `retry`; a status that
        `final` says is the answer is not retried); ModelError when the server cannot be reached in
        time, redirects, or sends more than `cap` bytes."""
        import requests
        from urllib3.exceptions import HTTPError

        tries = self.retries if retry else 0
        where = self.shown(url)
        failure: BaseException | None = None
        delay = 0.0
        for attempt in range(tries + 1):
            if attempt:
                self._pause(delay)
            try:
                status, headers, data = self._attempt(method, url, payload, cap)
            except _Stopped:
                raise ModelError(f"{where}: stopped (the run ended)") from None
            except _TooLong as error:
                raise _TooLong(f"{where}: the answer is over {error.args[0]:,} bytes") from None
            except (requests.RequestException, HTTPError, OSError, _Late) as error:
                if isinstance(error, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema, requests.exceptions.MissingSchema)):
                    raise ModelError(self.scrub(f"{where}: not a valid URL ({error})")) from None
                failure, delay = error, self._backoff(attempt)
                continue
            if status in REDIRECT_STATUS:
                raise ModelError(f"{where}: HTTP {status}: the server redirects to another address, and equita does not follow "
                                 "redirects (the answers would be recorded as this server's); give the final address as --server")  # fmt: skip
            text = data.decode("utf-8", errors="replace")
            try:
                body = json.loads(text)
            except (ValueError, RecursionError):
                body = None
            if status in RETRY_STATUS and attempt < tries and not (final and final(status, body, text)):
                failure, delay = None, self._retry_after(headers.get("Retry-After"), attempt)
                continue
            return status, body, text
        raise ModelError(self.scrub(f"{where}: no answer after {tries} retries ({self._describe(failure)})"))

    def _attempt(self, method: str, url: str, payload: dict | None, cap: int):
        """One request: (status, headers, body bytes), read within the deadline and the cap."""
        if self._stopped():
            raise _Stopped()
        from urllib3.util import Timeout

        deadline = time.monotonic() + self.timeout
        # total: connecting and waiting for the headers share the one deadline.
        response = self._session().request(method, url, json=payload, timeout=Timeout(total=self.timeout), stream=True, allow_redirects=False)
        try:
            # The socket's timeout is lowered to what is left, so that one slow read ends at the
            # deadline too (urllib3 sets it again for the connection's next request).
            sock = getattr(getattr(response.raw, "connection", None), "sock", None)
            # read1: what has arrived, at most one socket read (urllib3 >= 2.3); older urllib3 has
            # only read(n), which waits for n bytes, so small pieces keep the clock checked there.
            has_read1 = hasattr(response.raw, "read1")
            data = bytearray()
            while True:
                if self._stopped():
                    raise _Stopped()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Late()
                if sock is not None:
                    sock.settimeout(left)
                chunk = response.raw.read1(READ_CHUNK, decode_content=True) if has_read1 else response.raw.read(1024, decode_content=True)
                if not chunk:
                    break
                data += chunk
                if len(data) > cap:
                    raise _TooLong(cap)
        except BaseException:
            response.close()
            raise
        response.raw.release_conn()  # read whole: the connection serves the next request
        return response.status_code, response.headers, bytes(data)

    def _pause(self, seconds: float) -> None:
        stop = getattr(self._local, "stop", None)
        if stop is None:
            time.sleep(seconds)
        elif stop.wait(seconds):
            raise ModelError("stopped (the run ended)")

    def _backoff(self, attempt: int) -> float:
        return 0.0 if attempt == 0 else min(BACKOFF_MAX, BACKOFF_FACTOR * 2**attempt)

    def _retry_after(self, value: str | None, attempt: int) -> float:
        """The server's Retry-After (seconds or an HTTP date), capped; else the backoff."""
        from urllib3.exceptions import InvalidHeader
        from urllib3.util.retry import Retry

        if value:
            try:
                return min(max(0.0, float(Retry(0).parse_retry_after(value))), self.retry_after_max)
            except (InvalidHeader, ValueError, OverflowError):
                pass
        return self._backoff(attempt)

    def _describe(self, failure: BaseException | None) -> str:
        import requests
        from urllib3.exceptions import ReadTimeoutError

        if isinstance(failure, (_Late, requests.Timeout, ReadTimeoutError, TimeoutError)):
            return f"no whole answer within {self.timeout:g} s"
        reason = failure.args[0] if failure is not None and failure.args else failure
        reason = getattr(reason, "reason", reason)  # urllib3's MaxRetryError: what went wrong, not that it gave up
        # "<urllib3.connection.HTTPConnection object at 0x7f...>: " says nothing to a user.
        return f"{type(failure).__name__}: " + re.sub(r"<[^<>]* object at 0x[0-9a-f]+>: ", "", str(reason))[:300]

    def post(self, path: str, payload: dict, root: bool = False, retry: bool = True, tokens: int | None = None,
             final: Callable[[int, dict | None, str], bool] | None = None) -> dict:  # fmt: skip
        """The JSON object the server answers; `tokens`: the answer's token budget (its prompt's
        tokens too, where they are echoed), which bounds its size."""
        url = f"{self.root if root else self.base}{path}"
        cap = OTHER_BODY_MAX if tokens is None else BODY_OVERHEAD + BYTES_PER_TOKEN * tokens
        try:
            status, body, text = self.call("POST", url, payload, cap, retry, final)
        except _TooLong as error:
            if "max_tokens" not in payload:
                raise
            raise ModelError(f"{error}, more than {tokens} tokens can take: the server ignored max_tokens ({payload['max_tokens']})") from None
        if status != 200 or not isinstance(body, dict):
            raise ServerRefused(status, self.scrub(f"{self.shown(url)}: HTTP {status}: {_message(body, text)}"))
        return body

    def models(self) -> list[dict] | None:
        """The served models (GET /models), or None where the server does not list them."""
        status, body, text = self.call("GET", f"{self.base}/models")
        if status in (404, 405):
            return None
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise ModelError(self.scrub(f"{self.shown(self.base)}/models: HTTP {status}: {_message(body, text)} (is this an OpenAI-compatible base URL, ending in /v1?)"))
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
            return " ".join(str(error)[:300].split())
    return " ".join(text[:300].split()) or "empty answer"


def _refuses_token_ids(status: int, body: dict | None, text: str) -> bool:
    """llama-cpp-python answers a prompt of token ids it cannot read with a 500 naming the prompt:
    that is its answer, not a fault to retry."""
    return status == 500 and "prompt" in _message(body, text)


class ServerModel:
    """A model behind an OpenAI-compatible server, implementing the runner's `Model` protocol."""

    def __init__(self, client: Client, info: ModelInfo, tokenizer, concurrency: int, log=print):
        self.client, self.info, self.tokenizer, self.concurrency, self.log = client, info, tokenizer, concurrency, log
        self._top_k: int | None | bool = False  # False: not settled yet (see _settle_top_k)
        self._top_k_lock = threading.Lock()
        self._server_tokenize: bool | None = None
        self._probe: str | None | bool = False  # False: not run yet; None: passed; str: why it failed
        self._continuations: dict[str, list[int]] = {}  # " uomo" is tokenised once, not once per sentence
        self._said: set[str] = set()  # the notes logged once per run
        self._said_lock = threading.Lock()

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
            self._probe = self.client.scrub(reason) if reason else None
            if self._probe:
                self.log(f"log-likelihood tasks not computed: {self._probe}")
        return self._probe

    def answer(self, requests: Sequence[Request], batch_size: int | str = "auto", stats: dict | None = None) -> Iterator[tuple[list[int], list[dict]]]:
        """Answers as they arrive, `concurrency` requests in flight (batch_size is the server's business)."""
        if stats is not None:
            stats["concurrency"] = self.concurrency
        if not requests:
            return
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for index in range(len(requests)):
            todo.put(index)
        done: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()

        def work() -> None:
            self.client.stop_with(stop)
            while not stop.is_set():
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((index, self._answer_one(requests[index]), None))
                except BaseException as error:  # every request ends in `done`, or the loop below would wait for it
                    done.put((index, None, error))

        # Daemon threads, not a ThreadPoolExecutor (whose threads the interpreter joins at exit):
        # after Ctrl-C or a failed request the run exits at once, and `stop` ends the requests in
        # flight at their next read (their answers were not saved, so a rerun asks them again).
        for number in range(min(self.concurrency, len(requests))):
            threading.Thread(target=work, name=f"equita-server-{number}", daemon=True).start()
        try:
            for _ in range(len(requests)):
                index, response, error = done.get()
                if error is not None:
                    # A request that failed past its retries ends the run. The answers that arrived
                    # meanwhile are handed over first, so that they are saved too.
                    stop.set()
                    while True:
                        try:
                            index, response, other = done.get_nowait()
                        except queue.Empty:
                            break
                        if other is None:
                            yield [index], [response]
                    raise error
                yield [index], [response]
        finally:
            stop.set()

    # -- requests --------------------------------------------------------------------------------

    def _answer_one(self, request: Request) -> dict:
        return self._generate(request) if isinstance(request, Generate) else self._loglikelihood(request)

    def _say_once(self, note: str) -> None:
        with self._said_lock:
            if note in self._said:
                return
            self._said.add(note)
        self.log(note)

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
                            self.client.post(path, payload, retry=False, tokens=1)
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
            where = self.client.shown(self.client.base) + "/chat/completions"
            body = self.client.post("/chat/completions", {**payload, "messages": messages(request)}, tokens=request.max_new_tokens)
            message = _choice(body, "message", where)
            if not isinstance(message, dict):
                # A real empty answer says `content: null`; no message at all is a broken answer, not one to score.
                raise ModelError(f"{where}: the answer's choice has no message object ({_kind(message)}), so there is no answer to record")
            text = message.get("content")
            text = "" if text is None else text
        else:
            where = self.client.shown(self.client.base) + "/completions"
            body = self.client.post("/completions", {**payload, "prompt": request.user}, tokens=request.max_new_tokens)
            text = _choice(body, "text", where)
        if not isinstance(text, str):
            raise ModelError(f"{where}: the answer's text is {_kind(text)}, not a string")
        hidden = self.client.hide_secrets(text)
        if hidden != text:
            text = hidden
            self._say_once(f"{where}: an answer held the API key or the URL's password (a proxy echoing the Authorization header?); it is recorded as ***")
        cut = min((text.find(s) for s in request.stop if s in text), default=len(text))
        longest = request.max_new_tokens * CHARS_PER_TOKEN
        if cut > longest:
            cut = longest
            self._say_once(f"{where}: an answer was longer than {request.max_new_tokens} tokens can be; it is cut to {longest} characters")
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
            scored["greedy"].append(all(value >= max(top.values()) - ROUNDING for value, top in zip(picked, tops[len(context) : len(context) + len(tokens)])))
        return scored

    def _echo(self, ids: list[int]) -> tuple[list[float], list[dict]]:
        """The server's log-probability of every prompt token after the first (rounding above 0
        read as 0), and its top-1 alternatives."""
        where = self.client.shown(self.client.base) + "/completions"
        body = self.client.post("/completions", {**self._sampling(1), "prompt": ids, "echo": True, "logprobs": 1}, tokens=len(ids) + 1)
        logprobs = _choice(body, "logprobs", where)
        if logprobs is not None and not isinstance(logprobs, dict):
            raise ModelError(f"{where}: choices[0].logprobs is {_kind(logprobs)}, not an object")
        values = (logprobs or {}).get("token_logprobs")
        if values is not None and not isinstance(values, list):
            raise ModelError(f"{where}: choices[0].logprobs.token_logprobs is {_kind(values)}, not a list")
        if values is None or len(values) < len(ids):
            got = "none" if values is None else f"{len(values)} values"
            raise ModelError(f"{where}: echo returned {got} for a prompt of {len(ids)} tokens")
        values = [_number(v, f"choices[0].logprobs.token_logprobs[{i}]", where) for i, v in enumerate(values[: len(ids)])]
        if any(v is None or not math.isfinite(v) or v > ROUNDING for v in values[1:]):
            raise ModelError(f"{where}: echoed log-probabilities are not all numbers <= 0")
        values = values[:1] + [min(v, 0.0) for v in values[1:]]
        raw = logprobs.get("top_logprobs")
        if raw is not None and not isinstance(raw, list):
            raise ModelError(f"{where}: choices[0].logprobs.top_logprobs is {_kind(raw)}, not a list")
        raw = raw or []
        # A position without alternatives counts its own token as the best one.
        tops = []
        for position, value in enumerate(values):
            top = raw[position] if position < len(raw) else None
            if top is not None and not isinstance(top, dict):
                raise ModelError(f"{where}: choices[0].logprobs.top_logprobs[{position}] is {_kind(top)}, not an object")
            alternatives = {}
            for token, x in (top or {}).items():
                x = _number(x, f"choices[0].logprobs.top_logprobs[{position}][{str(token)[:20]!r}]", where)
                if x is not None:
                    if not math.isfinite(x) or x > ROUNDING:
                        raise ModelError(f"{where}: choices[0].logprobs.top_logprobs[{position}] holds {x}, not a log-probability <= 0")
                    alternatives[token] = min(x, 0.0)
            tops.append(alternatives or {"": value})
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
        return _token_list(body, self.client.shown(self.client.root))

    def _context_ids(self, request: Loglikelihood) -> list[int]:
        if self.tokenizer is not None:  # exactly as the in-process backend encodes it
            return prompt_ids(request, render_prompt(request, self.tokenizer), self.tokenizer)
        if not request.chat:
            return self._tokenize(request.user, specials=True)
        body = self.client.post("/tokenize", {"model": self.info.id, "messages": messages(request), "add_generation_prompt": True}, root=True)
        return _token_list(body, self.client.shown(self.client.root))

    # -- the check -------------------------------------------------------------------------------

    def probe(self) -> str | None:
        """None if the server's echoed log-probabilities are self-consistent, else what failed.

        Generate one token greedily after a prompt and note the log-probability the server gives
        it; then echo the prompt plus that token. There must be one value per prompt token, and
        the last must equal the generated token's (an off-by-one server reads it elsewhere).
        """
        where = self.client.shown(self.client.base) + "/completions"
        try:
            for prompt in PROBE_PROMPTS:
                ids = self._tokenize(prompt, specials=True)
                try:
                    # Retried like any request, except the 500 that llama-cpp-python gives a token-id prompt it cannot read.
                    body = self.client.post("/completions", {**self._sampling(1), "prompt": ids, "logprobs": 1}, tokens=1, final=_refuses_token_ids)
                except ServerRefused as error:
                    if error.status in (400, 422) or (error.status == 500 and "prompt" in str(error)):
                        return (f"the server refuses a prompt given as token ids ({str(error).splitlines()[0][:200]}); log-likelihood "
                                "needs them, since re-tokenised text would move the boundary between context and continuation")  # fmt: skip
                    raise
                generated = _choice(body, "logprobs", where)
                text = _choice(body, "text", where)
                values = generated.get("token_logprobs") if isinstance(generated, dict) else None
                if not isinstance(values, list) or not values or values[0] is None:
                    return f"the server returns no log-probability for a generated token (asked logprobs=1 after {prompt!r})"
                value = _number(values[0], "choices[0].logprobs.token_logprobs[0]", where)
                token = self._tokenize(text, specials=False) if isinstance(text, str) else []
                if len(token) != 1:
                    continue  # the generated text does not read back as one token: try another prompt
                echoed, _ = self._echo(ids + token)
                if not abs(echoed[len(ids)] - value) <= PROBE_TOLERANCE:
                    return (f"for {prompt!r} followed by {text!r}, the echoed log-probability of that token is {echoed[len(ids)]:.4f} "
                            f"but the server gave {value:.4f} when it generated it (an off-by-one prompt log-probability?)")  # fmt: skip
                return None
        except ModelError as error:
            return f"the log-probability check failed: {error}"
        return "the log-probability check could not run: no generated token read back as a single token"


def _kind(value) -> str:
    """What a JSON value is, in words."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _number(value, field: str, where: str) -> float | None:
    """A JSON number (or null) the server gave in `field`, as a float; else a one-line error naming the field."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"{where}: {field} is {_kind(value)}, not a number")
    try:
        return float(value)
    except OverflowError:  # a 400-digit integer
        raise ModelError(f"{where}: {field} is a number too large for a log-probability") from None


def _choice(body: dict, field: str, where: str):
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(f"{where}: the answer has no choices")
    return choices[0].get(field)


def _token_list(body: dict, where: str) -> list[int]:
    tokens = body.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise ModelError(f"{where}/tokenize: the answer has no list of token ids")
    return tokens
