"""The request cache: one JSON line per answered request, appended as batches finish.

A line is keyed by model revision, task, dataset version and the sha256 of the request as the
model saw it (rendered prompt plus settings), so a rerun after Ctrl-C, a crash or an OOM
recomputes nothing it already has, and a changed prompt, setting or model is never served a
stale answer. A line that cannot be read (a torn write, an edit), an answer that does not fit
its request (a NaN or positive log-probability, the wrong number of continuations), and two
lines that answer the same request differently are reported and their request recomputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict
from pathlib import Path

from .requests import Generate, Loglikelihood, Request


def request_key(request: Request, rendered: str) -> str:
    """sha256 of what decides the answer: request type, rendered prompt and settings."""
    fields = asdict(request)
    fields.pop("user")
    fields.pop("system")
    fields["type"] = type(request).__name__
    fields["prompt"] = rendered
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _valid_response(response) -> bool:
    if not isinstance(response, dict):
        return False
    if "text" in response:
        return isinstance(response["text"], str)
    logprobs, greedy = response.get("logprobs"), response.get("greedy")
    return (
        isinstance(logprobs, list)
        and isinstance(greedy, list)
        and len(logprobs) == len(greedy) > 0
        and all(isinstance(x, (int, float)) for x in logprobs)
    )


def misfit(response: dict, request: Request) -> str | None:
    """Why a cached answer cannot be the answer to `request` (None when it can)."""
    if isinstance(request, Generate):
        return None if isinstance(response.get("text"), str) else "a generation answer needs a 'text' string"
    if isinstance(request, Loglikelihood):
        logprobs, greedy = response.get("logprobs"), response.get("greedy")
        if not isinstance(logprobs, list) or not isinstance(greedy, list):
            return "a log-likelihood answer needs 'logprobs' and 'greedy' lists"
        expected = len(request.continuations)
        if len(logprobs) != expected or len(greedy) != expected:
            return f"{len(logprobs)} log-probabilities and {len(greedy)} greedy flags for {expected} continuations"
        for value in logprobs:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 0:
                return f"log-probability {value!r} is not a number <= 0"
        if not all(isinstance(flag, bool) for flag in greedy):
            return "greedy flags must be true or false"
        return None
    return f"unknown request type {type(request).__name__}"


class RequestCache:
    FIELDS = ("model", "task", "dataset_version", "prompt_sha256", "response")

    def __init__(self, path: Path):
        self.path = Path(path)
        # Every line read per key: (line number, response, recomputed). A key is answered from the
        # lines that fit its request; a line written to replace unusable ones ("recomputed") wins.
        self.lines: dict[tuple[str, str, str, str], list[tuple[int, dict, bool]]] = {}
        self.problems: list[str] = []
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                try:
                    # Strictly UTF-8: a damaged byte inside an answer must not become a replacement character that is then scored.
                    entry = json.loads(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self.problems.append(f"{self.path.name} line {number}: not UTF-8; its request is recomputed")
                    continue
                except json.JSONDecodeError as error:
                    self.problems.append(f"{self.path.name} line {number}: not valid JSON ({error.msg}); its request is recomputed")
                    continue
                except RecursionError:
                    self.problems.append(f"{self.path.name} line {number}: nested too deeply; its request is recomputed")
                    continue
                if not isinstance(entry, dict) or any(k not in entry for k in self.FIELDS) or not _valid_response(entry["response"]):
                    self.problems.append(f"{self.path.name} line {number}: not a cache entry; its request is recomputed")
                    continue
                key = tuple(str(entry[k]) for k in self.FIELDS[:4])
                self.lines.setdefault(key, []).append((number, entry["response"], entry.get("recomputed") is True))

    def get(self, model: str, task: str, version: str, key: str, request: Request | None = None) -> dict | None:
        """The cached answer, or None (recompute it); with `request`, answers that do not fit it are reported and set aside."""
        lines = self.lines.get((model, task, version, key), [])
        fitting = []
        for number, response, recomputed in lines:
            problem = misfit(response, request) if request is not None else None
            if problem:
                self.problems.append(f"{self.path.name} line {number}: the cached answer does not fit its request ({problem}); its request is recomputed")
            else:
                fitting.append((number, response, recomputed))
        if not fitting:
            return None
        replacements = [response for _, response, recomputed in fitting if recomputed]
        if replacements:
            return replacements[-1]
        distinct = {json.dumps(response, sort_keys=True) for _, response, _ in fitting}
        if len(distinct) > 1:
            # The same request answered two ways (an edit, or a model that is not deterministic): neither is trusted.
            numbers = ", ".join(str(number) for number, _, _ in fitting)
            self.problems.append(f"{self.path.name} lines {numbers} answer the same request differently; all set aside, its request is recomputed")
            return None
        return fitting[0][1]

    def add(self, model: str, task: str, version: str, answered: list[tuple[str, dict]]) -> None:
        """Append (key, response) pairs and make them durable before returning."""
        if not answered:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for key, response in answered:
            entry = {"model": model, "task": task, "dataset_version": version, "prompt_sha256": key, "response": response}
            if (model, task, version, key) in self.lines:
                entry["recomputed"] = True  # replaces lines that could not be used
            lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
            self.lines.setdefault((model, task, version, key), []).append((0, response, True))
        with self.path.open("a+b") as handle:
            # A torn last line from a killed run must not swallow the first new entry.
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write("".join(lines).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
