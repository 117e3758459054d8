"""The request cache: one JSON line per answered request, appended as batches finish.

A line is keyed by model revision, task, dataset version and the sha256 of the request as the
model saw it (rendered prompt plus settings), so a rerun after Ctrl-C, a crash or an OOM
recomputes nothing it already has, and a changed prompt, setting or model is never served a
stale answer. A line that cannot be read (a torn write, an edit), an answer that does not fit
its request (a log-probability that is NaN, infinite, positive or an integer too large for a
float, the wrong number of continuations), and two lines that answer the same request
differently are reported and their request recomputed. Lines are written as strict JSON: an
answer holding a non-finite number is an error, never a line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict
from pathlib import Path

from .requests import Generate, Loglikelihood, Request


class CacheError(ValueError):
    """The cache file cannot be written (a full disk, a read-only file system), or an answer cannot be
    written as strict JSON; the message names the file or the request. A ValueError, so that the run
    command reports it in one line."""


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


def _logprob_problem(value) -> str | None:
    """Why `value` cannot be a log-probability: it must be a finite number <= 0. Not -inf, which a
    metric would drop from a sum without a word (and samples.jsonl would hold null); not an
    integer of hundreds of digits, which JSON allows but no float holds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"log-probability {value!r} is not a number"
    try:
        number = float(value)
    except OverflowError:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        return f"log-probability is an integer of about {digits} digits, too large for a float"
    if not math.isfinite(number) or number > 0:
        return f"log-probability {value!r} is not a finite number <= 0"
    return None


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
            problem = _logprob_problem(value)
            if problem:
                return problem
        if not all(isinstance(flag, bool) for flag in greedy):
            return "greedy flags must be true or false"
        return None
    return f"unknown request type {type(request).__name__}"


def _non_finite(response: dict) -> str:
    """The first non-finite number of an answer, for the message."""
    values = response.get("logprobs") if isinstance(response.get("logprobs"), list) else []
    return next((repr(v) for v in values if isinstance(v, float) and not math.isfinite(v)), "NaN or infinity")


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
                except ValueError:  # not a JSONDecodeError: an integer of more than 4300 digits, which Python refuses to read
                    self.problems.append(f"{self.path.name} line {number}: holds a number too long to read; its request is recomputed")
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
        lines = []
        for key, response in answered:
            entry = {"model": model, "task": task, "dataset_version": version, "prompt_sha256": key, "response": response}
            if (model, task, version, key) in self.lines:
                entry["recomputed"] = True  # replaces lines that could not be used
            try:
                lines.append(json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n")
            except ValueError:  # NaN or +-inf: a rerun would read the line as damaged, and a metric would drop the value
                raise CacheError(f"{self.path}: the answer to {task} request {key} holds a non-finite number ({_non_finite(response)}); "
                                 "it is not written, and nothing of this batch is") from None  # fmt: skip
        try:
            self._append("".join(lines).encode("utf-8"))
        except OSError as error:
            reason = error.strerror or str(error)
            raise CacheError(f"{reason[:1].lower()}{reason[1:]}: {self.path} (the answers of earlier batches are saved; "
                             "rerun the same command to resume once this is fixed)") from None  # fmt: skip
        for key, response in answered:
            self.lines.setdefault((model, task, version, key), []).append((0, response, True))

    def _append(self, data: bytes) -> None:
        """Append `data` durably; on a failed write, cut the file back to what it was, so that a
        full disk leaves no torn line behind."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered: a failed write fails here, not again when the file is closed after the cut.
        with self.path.open("a+b", buffering=0) as handle:
            size = handle.seek(0, os.SEEK_END)
            try:
                # A torn last line from a killed run must not swallow the first new entry.
                if size > 0:
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        data = b"\n" + data
                view = memoryview(data)
                while view:  # an unbuffered write may take only part of it
                    view = view[handle.write(view) :]
                os.fsync(handle.fileno())
            except OSError:
                try:
                    handle.truncate(size)
                except OSError:
                    pass  # the torn line is reported and recomputed on the next read
                raise
