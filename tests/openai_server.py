"""A loopback server that speaks the vLLM subset of the OpenAI protocol, answering with the
project's own in-process SmolLM2 (like hub_server.py does for publishing).

Endpoints: GET /v1/models; POST /v1/chat/completions, /v1/completions (text or token-id prompts,
`echo`, `logprobs`), /tokenize (text or chat messages). Greedy answers come from the in-process
backend itself, so a run through this server must score what an in-process run scores.

Faults for the tests, consumed one per request from `state.faults`: ("status", code, retry_after),
("drop",) closes the connection without an answer, ("slow", seconds) answers late. With
`state.fail_after = N`, every request after the N-th scored continuation (echo) answers 500 (a
server that went down).
`state.shifted = True` makes echoed log-probabilities off by one position, as llama-cpp-python
0.3's server gives them; `completions = False` and `reject_top_k = True` make a chat-only hosted API.

`state.mode` makes a hostile server (the red-team probes, test_probes_server.py). A task's request
is one with max_tokens > 1 (equita's own checks ask for one token):
- "huge": a 2 MB chat answer, whatever max_tokens says; "long": a 20,000-character one (under the
  byte cap, over what the token budget can produce); "echo_key": the chat answer copies the
  Authorization header; "missing": a chat choice without a message; "null_content": `content: null`;
  "list_content": content as a list of parts; "no_choices": an empty list of choices; "not_json": an
  HTML page with status 200; "refuse_key": every request answered 401, quoting the Authorization header.
- "trickle": a task's answer sent one byte every 0.1 s (20 s at most); "interrupt": the same, after a
  SIGINT to this process (Ctrl-C while requests are in flight); "retry_after": 429 with
  Retry-After: 3600 for a task's requests; "redirect": every request answered 307 to another port.
- "probe503": the first one-token log-probability request (equita's check) answers 503; "drop":
  echo requests get the connection closed; "tinypos": every log-probability at +5e-7 (rounding
  above 0); "lp_dict", "lp_str", "lp_nan", "lp_huge", "tops_list": echoed
  token_logprobs as objects, strings, NaN or a 400-digit integer, top_logprobs values as lists.
Only 127.0.0.1; stopped by the test.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from equita.runners.requests import Generate, render_prompt


@dataclass
class State:
    model: object  # equita.runners.backends.hf.TransformersModel
    name: str = "smollm2-test"
    key: str | None = None
    faults: list = field(default_factory=list)
    fail_after: int | None = None
    shifted: bool = False
    tokenize: bool = True
    completions: bool = True  # False: a chat-only API (no /v1/completions)
    reject_top_k: bool = False  # True: an API that knows no top_k (400, as OpenAI's answers)
    mode: str | None = None  # a hostile server: see the module's docstring
    hostile_once: bool = True  # "probe503", "interrupt": their one fault is still to come
    answered: int = 0
    seen: list = field(default_factory=list)  # (path, payload) of every request that reached the model
    authorizations: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hangs up (equita giving up on an answer) is what the tests cause, not an error to print.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def start(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else small keep-alive answers wait on delayed ACKs (40 ms each)

        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, body: dict | bytes, headers: dict | None = None):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a slow answer past its timeout): that is the fault under test

        def _fault(self, scoring: bool) -> bool:
            with state.lock:
                fault = state.faults.pop(0) if state.faults else None
                state.answered += scoring  # continuations scored (echo requests): what fail_after counts
                down = state.fail_after is not None and state.answered > state.fail_after
            if down:
                self._send(500, {"error": {"message": "the server went down"}})
                return True
            if fault is None:
                return False
            if fault[0] == "status":
                headers = {"Retry-After": str(fault[2])} if len(fault) > 2 and fault[2] is not None else {}
                self._send(fault[1], {"error": {"message": f"injected {fault[1]}"}}, headers)
                return True
            if fault[0] == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return True
            if fault[0] == "slow":
                time.sleep(fault[1])
            return False

        def _trickle(self):
            """Headers at once, then the body a byte every 0.1 s: 20 s at most, less if the client leaves."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "200")
            self.end_headers()
            for _ in range(200):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.1)

        def _first(self) -> bool:
            with state.lock:
                first, state.hostile_once = state.hostile_once, False
            return first

        def _hostile(self, payload: dict) -> bool:
            """Answer as state.mode says, where it changes the whole answer; False: answer as usual."""
            mode, task = state.mode, payload.get("max_tokens", 0) > 1
            if mode == "redirect":
                self._send(307, {}, {"Location": f"http://127.0.0.1:{self.server.server_port + 1}{self.path}"})
            elif mode == "refuse_key":
                self._send(401, {"error": {"message": f"invalid key in {self.headers.get('Authorization')}"}})
            elif mode == "not_json" and task:
                self._send(200, b"<html>502 Bad Gateway</html>")
            elif mode == "retry_after" and task:
                self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "3600"})
            elif mode == "trickle" and task:
                self._trickle()
            elif mode == "interrupt" and task:
                if self._first():
                    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, once, delivered to the main thread of this process (the run's)
                self._trickle()
            elif mode == "drop" and payload.get("echo"):
                self.close_connection = True
                self.connection.shutdown(2)
            elif mode == "probe503" and payload.get("logprobs") and not payload.get("echo") and payload.get("max_tokens") == 1 and self._first():
                self._send(503, {"error": {"message": "busy, retry"}})
            else:
                return False
            return True

        def _spoil(self, path: str, payload: dict, body: dict) -> dict:
            """The usual answer, changed as state.mode says."""
            mode, task = state.mode, payload.get("max_tokens", 0) > 1
            if mode is None or "choices" not in body:
                return body
            choice = body["choices"][0]
            if path == "/v1/chat/completions" and task:
                if mode == "huge":
                    choice["message"]["content"] = "piacevole " * 200_000
                elif mode == "long":
                    choice["message"]["content"] = "piacevole " * 2_000
                elif mode == "echo_key":
                    choice["message"]["content"] = f"debug: {self.headers.get('Authorization')}"
                elif mode == "missing":
                    del choice["message"]
                elif mode == "null_content":
                    choice["message"]["content"] = None
                elif mode == "list_content":
                    choice["message"]["content"] = [{"type": "text", "text": "piacevole"}]
                elif mode == "no_choices":
                    body["choices"] = []
            if path == "/v1/completions" and mode == "tinypos" and choice.get("logprobs"):
                # A model sure of every token, with float rounding above 0: generated and echoed alike.
                logprobs = choice["logprobs"]
                logprobs["token_logprobs"] = [None if v is None else 5e-7 for v in logprobs["token_logprobs"]]
                logprobs["top_logprobs"] = [None if t is None else {k: 5e-7 for k in t} for t in logprobs["top_logprobs"]]
            if path == "/v1/completions" and payload.get("echo"):
                logprobs = choice["logprobs"]
                if mode == "lp_dict":
                    logprobs["token_logprobs"] = [None] + [{"x": 1}] * (len(logprobs["token_logprobs"]) - 1)
                elif mode == "lp_str":
                    logprobs["token_logprobs"] = [None] + ["abc"] * (len(logprobs["token_logprobs"]) - 1)
                elif mode == "lp_nan":
                    logprobs["token_logprobs"] = [None] + [float("nan")] * (len(logprobs["token_logprobs"]) - 1)
                elif mode == "lp_huge":
                    logprobs["token_logprobs"] = [None] + [-(10**400)] * (len(logprobs["token_logprobs"]) - 1)
                elif mode == "tops_list":
                    logprobs["top_logprobs"] = [None] + [{"a": [1]}] * (len(logprobs["top_logprobs"]) - 1)
            return body

        def do_GET(self):
            state.authorizations.append(self.headers.get("Authorization"))
            if self._hostile({}):
                return
            if state.key is not None and self.headers.get("Authorization") != f"Bearer {state.key}":
                self._send(401, {"error": {"message": "invalid API key"}})
                return
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": state.name, "object": "model", "owned_by": "equita-test", "max_model_len": 8192}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            state.authorizations.append(self.headers.get("Authorization"))
            payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if state.key is not None and self.headers.get("Authorization") != f"Bearer {state.key}":
                self._send(401, {"error": {"message": "invalid API key"}})
                return
            routes = {"/v1/chat/completions": chat, "/v1/completions": completions, "/tokenize": tokenize}
            if self.path not in routes or (self.path == "/tokenize" and not state.tokenize) or (self.path == "/v1/completions" and not state.completions):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            if state.reject_top_k and "top_k" in payload:
                self._send(400, {"error": {"message": "Unrecognized request argument supplied: top_k"}})
                return
            if self._fault(bool(payload.get("echo"))) or self._hostile(payload):
                return
            with state.lock:
                state.seen.append((self.path, payload))
                body = routes[self.path](payload)
            self._send(200, self._spoil(self.path, payload, body))

    server = _Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll: shutdown() waits for it, once per test.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def _generate_text(request: Generate) -> str:
    (_, (response,)) = next(iter(STATE.model.answer([request], 1)))
    return response["text"]


STATE: State  # set by serve(); the handlers below read the model from it


def serve(state: State):
    global STATE
    STATE = state
    return start(state)


def chat(payload: dict) -> dict:
    system = next((m["content"] for m in payload["messages"] if m["role"] == "system"), None)
    user = next(m["content"] for m in payload["messages"] if m["role"] == "user")
    text = _generate_text(Generate(user=user, system=system, max_new_tokens=payload["max_tokens"], stop=tuple(payload.get("stop") or ())))
    return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


def tokenize(payload: dict) -> dict:
    tokenizer = STATE.model.tokenizer
    if "messages" in payload:
        text = tokenizer.apply_chat_template(payload["messages"], add_generation_prompt=payload.get("add_generation_prompt", True), tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    else:
        ids = tokenizer(payload["prompt"], add_special_tokens=payload.get("add_special_tokens", True))["input_ids"]
    return {"tokens": ids, "count": len(ids), "max_model_len": 8192}


def completions(payload: dict) -> dict:
    model = STATE.model
    prompt = payload["prompt"]
    if not payload.get("logprobs"):
        # Plain text generation, as the in-process backend does it for raw-text requests.
        request = Generate(user=prompt, max_new_tokens=payload["max_tokens"], stop=tuple(payload.get("stop") or ()), chat=False)
        assert render_prompt(request, model.tokenizer) == prompt
        return {"object": "text_completion", "choices": [{"index": 0, "text": _generate_text(request), "logprobs": None, "finish_reason": "stop"}]}
    ids = list(prompt) if isinstance(prompt, list) else model.tokenizer(prompt)["input_ids"]
    values, tops, texts, generated = [], [], [], []

    def top(row) -> dict:
        best = int(row.argmax())
        return {model.tokenizer.decode([best]): float(row[best])}

    with torch.inference_mode():
        logprobs = model.model(input_ids=torch.tensor([ids], device=model.model.device)).logits[0].float().log_softmax(-1)
        if payload.get("echo"):
            for position in range(len(ids)):
                # Position p's value: the log-probability of token p given the tokens before it (None
                # for the first); shifted: read at p itself, the off-by-one bug.
                row = position if STATE.shifted else position - 1
                values.append(None if row < 0 else float(logprobs[row, ids[position]]))
                tops.append(None if row < 0 else top(logprobs[row]))
                texts.append(model.tokenizer.decode([ids[position]]))
        last = logprobs[-1]
        for _ in range(payload["max_tokens"]):
            best = int(last.argmax())
            values.append(float(last[best]))
            tops.append(top(last))
            texts.append(model.tokenizer.decode([best]))
            generated.append(best)
            if len(generated) < payload["max_tokens"]:
                sequence = torch.tensor([ids + generated], device=model.model.device)
                last = model.model(input_ids=sequence).logits[0, -1].float().log_softmax(-1)
    text = model.tokenizer.decode(generated)
    if payload.get("echo"):
        text = model.tokenizer.decode(ids) + text
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": "length",
            "logprobs": {"tokens": texts, "token_logprobs": values, "top_logprobs": tops}}]}  # fmt: skip
