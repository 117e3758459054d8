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
0.3's server gives them; `completions = False` and `reject_top_k = True` make a chat-only hosted API. Only 127.0.0.1; stopped by the test.
"""

from __future__ import annotations

import json
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
    answered: int = 0
    seen: list = field(default_factory=list)  # (path, payload) of every request that reached the model
    authorizations: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def start(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else small keep-alive answers wait on delayed ACKs (40 ms each)

        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, body: dict, headers: dict | None = None):
            data = json.dumps(body).encode()
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

        def do_GET(self):
            state.authorizations.append(self.headers.get("Authorization"))
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
            if self._fault(bool(payload.get("echo"))):
                return
            with state.lock:
                state.seen.append((self.path, payload))
                body = routes[self.path](payload)
            self._send(200, body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
