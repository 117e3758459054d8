"""The request cache: one JSON line per answered request, appended as batches finish.

A line is keyed by model revision, task, dataset version and the sha256 of the request as the
model saw it (rendered prompt plus settings), so a rerun after Ctrl-C, a crash or an OOM
recomputes nothing it already has, and a changed prompt, setting or model is never served a
stale answer. A line that cannot be read (a torn write, an edit) is reported and its request
recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from equita.runners.requests import Request


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


class RequestCache:
    FIELDS = ("model", "task", "dataset_version", "prompt_sha256", "response")

    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries: dict[tuple[str, str, str, str], dict] = {}
        self.problems: list[str] = []
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError as error:
                    self.problems.append(f"{self.path.name} line {number}: not valid JSON ({error.msg}); its request is recomputed")
                    continue
                if not isinstance(entry, dict) or any(k not in entry for k in self.FIELDS) or not _valid_response(entry["response"]):
                    self.problems.append(f"{self.path.name} line {number}: not a cache entry; its request is recomputed")
                    continue
                self.entries[tuple(str(entry[k]) for k in self.FIELDS[:4])] = entry["response"]

    def get(self, model: str, task: str, version: str, key: str) -> dict | None:
        return self.entries.get((model, task, version, key))

    def add(self, model: str, task: str, version: str, answered: list[tuple[str, dict]]) -> None:
        """Append (key, response) pairs and make them durable before returning."""
        if not answered:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for key, response in answered:
            entry = {"model": model, "task": task, "dataset_version": version, "prompt_sha256": key, "response": response}
            lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
            self.entries[(model, task, version, key)] = response
        with self.path.open("a+b") as handle:
            # A torn last line from a killed run must not swallow the first new entry.
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write("".join(lines).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
