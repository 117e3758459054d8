"""`equita bench`: equita's runner against its peers on the same work, on this machine.

The peers are lm-evaluation-harness (its own pipeline on a task YAML written here for the same
prompts) and the plain `transformers` loop of P-AT's reference code (one prompt at a time).
Every run is a fresh process (bench_worker), tools alternate within each repetition, and the
medians are compared. Before a ratio is reported the runs must have done the same work: the
same prompts, the same greedy answers (or, where two answers part, a near-tie of the model's
own top two tokens at that step), log-probabilities within LOGPROB_TOLERANCE. Otherwise the
ratio is withheld and the report says why.

Each tool's computed work is set against this machine's ceiling: the multiply-adds of every
linear layer it ran (counted in the worker, padding included) per second, as a share of a
measured float matrix-multiply rate. Work a tool avoids (a token tree, a prefix run once) is not
counted for it, so the share stays below 1 however clever the tool; tokens per second count the
work as the requests name it, the same for every tool.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable

import torch
import yaml

from .. import data
from ..backends.hf import TransformersModel
from ..backends.models import load_model
from ..requests import Generate
from ..run import limited, write_atomic
from ..tasks import EVAL_TASKS, TASK_GROUPS

BENCH_SCHEMA = "equita.bench/1"
LOGPROB_TOLERANCE = 1e-4
# Log-probability differences up to this are float rounding (a batch of 64 padded sequences in
# float32 moves a 3-token ItaP-AT answer by ~3e-4); beyond it they are not the same work.
ROUNDING = 1e-3
RECHECKED = 20  # requests rescored one sequence at a time when a peer differs within ROUNDING
# Two greedy answers that part where the model's top two tokens are closer than this (in
# log-probability, recomputed one prompt at a time) differ by float rounding, not by work.
NEAR_TIE = 1e-3
TOOLS = ("equita", "lm-eval", "naive")


@dataclass(frozen=True)
class Workload:
    name: str
    task: str  # the equita task whose rows, prompts and settings are used, or a task group (a whole `equita run`)
    limit: int | None  # default subset for a CPU (rows spread over the dataset, or whole professions); None: all
    tools: tuple[str, ...]  # who runs it (the naive loop only generates)
    targets: dict = field(default_factory=dict)  # tool -> speed-up equita must reach against it


WORKLOADS = {
    workload.name: workload
    for workload in (
        Workload("itap-at", "itap-at", 128, ("equita", "lm-eval", "naive"), {"naive": 5.0}),
        Workload("jobs", "jobs", None, ("equita", "lm-eval"), {"lm-eval": 3.0}),
        Workload("gfg", "gfg-reformulation-neogate", 32, ("equita", "lm-eval", "naive"), {"lm-eval": 3.5}),
        # The number a user feels: `equita run --tasks bias` end to end (metrics and report
        # included) against lm-eval running the same four tasks on the same prompts.
        Workload("suite", "bias", None, ("equita", "lm-eval"), {"lm-eval": 1.5}),
    )
}
DEFAULT_WORKLOADS = ("itap-at", "jobs", "gfg")  # the suite takes about an hour here: asked for by name


class BenchError(Exception):
    """A benchmark that cannot run: a missing peer, a failed run, unknown workloads."""


@dataclass
class BenchOptions:
    model: str = "smollm2"
    out: Path = Path("bench")
    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    tools: tuple[str, ...] = TOOLS
    # "sweep": each tool at its own best fixed size (a short sweep), and both at EQUAL_BATCH;
    # "auto": each tool sizes its own batches (lm-eval's probe); a number: the same for both.
    batch_size: int | str = "sweep"
    repeats: int = 3
    limits: dict = field(default_factory=dict)  # workload -> rows (None: all), overriding Workload.limit
    device: str = "cpu"
    dtype: str = "float32"
    datasets: str | None = None
    source_dir: Path | None = None


# -- what each tool is given ----------------------------------------------------------------------


def lm_eval_task_yaml(name: str, prompts_file: Path, kind: str, max_new_tokens: int = 0, stop: tuple[str, ...] = ()) -> dict:
    """An lm-eval task reading the benchmark's prompts as they are (already chat-rendered).

    Generation: greedy, the same token budget and stop strings (lm-eval adds the EOS token's
    text, as equita stops at EOS). Scoring: a multiple-choice task whose choices are the
    continuations, glued to the context with no delimiter (they carry their own space).
    """
    task = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(prompts_file.resolve())}},
        "test_split": "test",
        "doc_to_text": "prompt",
    }
    if kind == "generate":
        task |= {
            "output_type": "generate_until",
            "doc_to_target": "reference",
            "generation_kwargs": {"until": list(stop), "max_gen_toks": max_new_tokens, "do_sample": False},
            "metric_list": [{"metric": "exact_match"}],
        }
    else:
        task |= {
            "output_type": "multiple_choice",
            "doc_to_choice": "continuations",
            "doc_to_target": 0,
            "target_delimiter": "",
            "metric_list": [{"metric": "acc"}],
        }
    return task


def prepare_workload(workload: Workload, model: TransformersModel, folder: Path, options: BenchOptions, log) -> dict:
    """Write rows.jsonl, prompts.jsonl and the lm-eval YAML; return the workload's description.

    A task group (the suite) gets one such folder per task, and lm-eval runs all their YAMLs.
    """
    limit = options.limits.get(workload.name, workload.limit)
    if workload.task in TASK_GROUPS:
        parts = {name: prepare_task(name, limit, model, folder / name, options, log) for name in TASK_GROUPS[workload.task]}
        bos = {part["add_bos_token"] for part in parts.values()}
        if len(bos) > 1:
            raise BenchError(f"{workload.name}: lm-eval adds BOS to every task or to none, and these tasks differ; run them as separate workloads")
        return {
            "task": workload.task,
            "kind": "suite",
            "requests": sum(part["requests"] for part in parts.values()),
            "limit": limit,
            "add_bos_token": bos.pop(),
            "max_length": max(part["max_length"] for part in parts.values()),
            "parts": parts,
        }
    return prepare_task(workload.task, limit, model, folder, options, log)


def prepare_task(name: str, limit: int | None, model: TransformersModel, folder: Path, options: BenchOptions, log) -> dict:
    """One task's rows.jsonl, prompts.jsonl and lm-eval YAML in `folder`."""
    task = EVAL_TASKS[name]
    where, location, revision = data.locate(task.dataset, options.datasets, options.source_dir, log=log)
    rows = data.load_rows(task.config, task.split, where, location, revision)
    rows = limited(task, rows, limit)
    requests = [task.request(row) for row in rows]
    kind = "generate" if isinstance(requests[0], Generate) else "loglikelihood"
    prompts, prompt_tokens, scored_tokens, longest = [], 0, 0, 0
    for request in requests:
        text = model.render(request)
        ids = model._encode(text, request)
        prompt_tokens += len(ids)
        entry = {"prompt": text, "add_special_tokens": not (request.chat and model.info.chat_template)}
        if kind == "generate":
            entry |= {"max_new_tokens": request.max_new_tokens, "stop": list(request.stop), "reference": ""}
            longest = max(longest, len(ids) + request.max_new_tokens)
        else:
            entry["continuations"] = list(request.continuations)
            # What scoring each continuation with its context reads, the common unit of work.
            continuations = model._continuation_tokens(request)
            scored_tokens += sum(len(ids) + len(tokens) for tokens in continuations)
            longest = max(longest, len(ids) + max(len(tokens) for tokens in continuations))
        prompts.append(entry)
    folder.mkdir(parents=True, exist_ok=True)
    _write_jsonl(folder / "rows.jsonl", rows)
    _write_jsonl(folder / "prompts.jsonl", prompts)
    lm_eval_name = "equita_bench_" + name.replace("-", "_")
    settings = {}
    if kind == "generate":
        settings = {"max_new_tokens": requests[0].max_new_tokens, "stop": list(requests[0].stop)}
    task_yaml = lm_eval_task_yaml(lm_eval_name, folder / "prompts.jsonl", kind, **settings)
    (folder / "lm_eval").mkdir(exist_ok=True)
    (folder / "lm_eval" / f"{lm_eval_name}.yaml").write_text(yaml.safe_dump(task_yaml, sort_keys=False, allow_unicode=True))
    return {
        "task": name,
        "dataset": {"id": task.dataset.id, "config": task.config, "version": task.dataset.version, "revision": revision},
        "kind": kind,
        "requests": len(requests),
        "limit": limit,
        "prompt_tokens": prompt_tokens,
        "scored_tokens": scored_tokens,
        "settings": settings,
        "lm_eval_task": lm_eval_name,
        # lm-eval adds BOS to every context or to none: as equita does for raw text (chat prompts carry their own).
        "add_bos_token": bool(prompts[0]["add_special_tokens"] and model.tokenizer("a")["input_ids"][:1] == [model.tokenizer.bos_token_id]),
        # lm-eval's `auto` probes its batch size on sequences this long (by default the model's
        # whole context, 8,192 tokens for SmolLM2, which on a CPU takes longer than the work).
        "max_length": longest + 1,
        "prompts": prompts,
    }


def _write_jsonl(path: Path, records: list[dict]) -> None:
    write_atomic(path, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))


# -- running ------------------------------------------------------------------------------------


def run_worker(spec: dict, folder: Path) -> dict:
    """One run in a fresh process; adds its wall time and peak resident memory (from the kernel)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{spec['tool']}-{spec['repetition']}"
    spec_path, out_path, log_path = folder / f"{stem}.spec.json", folder / f"{stem}.json", folder / f"{stem}.log"
    spec_path.write_text(json.dumps(spec, indent=2))
    out_path.unlink(missing_ok=True)
    environment = dict(os.environ, TOKENIZERS_PARALLELISM="false", HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    started = time.perf_counter()
    with log_path.open("w") as log:
        process = subprocess.Popen([sys.executable, "-m", "equita.runners.bench.worker", str(spec_path), str(out_path)], stdout=log, stderr=log, env=environment)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0 or not out_path.is_file():
        tail = log_path.read_text(errors="replace")[-2000:]
        raise BenchError(f"{spec['tool']} run {spec['repetition']} of {spec['workload_name']} failed (exit {process.returncode}); log {log_path}:\n{tail}")
    result = json.loads(out_path.read_text())
    result["wall_s"] = wall
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux reports KiB
    return result


# -- checking that the work was the same --------------------------------------------------------


def compare_logprobs(reference: list[list[float]], other: list[list[float]], alone: Callable[[int], list[float]] | None = None) -> dict:
    """Largest absolute difference over all continuations; shapes must match.

    Beyond LOGPROB_TOLERANCE but within ROUNDING, the RECHECKED requests that differ most are
    scored again one sequence at a time (`alone(i)`: each continuation with its context, no
    batch, no padding). If equita's values are within the tolerance of those, or no further from
    them than the peer's, the difference is float rounding (batched, padded; on a long prompt
    both tools can sit ~1e-4 from one-sequence scoring), not other work, and the check says so
    with both errors. A whole token's difference is nats, far beyond ROUNDING.
    """
    if len(reference) != len(other) or any(len(a) != len(b) for a, b in zip(reference, other)):
        return {"same_work": False, "why": "different numbers of requests or continuations"}
    by_request = [max((abs(x - y) for x, y in zip(a, b)), default=0.0) for a, b in zip(reference, other)]
    worst = max(by_request, default=0.0)
    result = {"same_work": worst <= LOGPROB_TOLERANCE, "max_logprob_diff": worst}
    if result["same_work"]:
        return result
    why = f"log-probabilities differ by up to {worst:.2e} (> {LOGPROB_TOLERANCE})"
    if worst > ROUNDING or alone is None:
        return {**result, "why": why}
    beyond = [i for i in sorted(range(len(by_request)), key=lambda i: -by_request[i]) if by_request[i] > LOGPROB_TOLERANCE]
    errors = {"equita": 0.0, "peer": 0.0}
    for i in beyond[:RECHECKED]:
        truth = alone(i)
        errors["equita"] = max(errors["equita"], *(abs(x - t) for x, t in zip(reference[i], truth)))
        errors["peer"] = max(errors["peer"], *(abs(y - t) for y, t in zip(other[i], truth)))
    recheck = {"requests_beyond_tolerance": len(beyond), "rechecked": min(len(beyond), RECHECKED),
               "equita_max_error": errors["equita"], "peer_max_error": errors["peer"]}  # fmt: skip
    if errors["equita"] <= max(LOGPROB_TOLERANCE, errors["peer"]):
        return {**result, "same_work": True, "recheck": recheck}
    return {**result, "recheck": recheck, "why": f"{why}, and equita's differ from one-sequence scoring by up to {errors['equita']:.2e}"}


def score_alone(model: TransformersModel, prompts: list[dict]) -> Callable[[int], list[float]]:
    """Each continuation of prompt i scored with its context in a forward pass of its own."""

    def alone(number: int) -> list[float]:
        entry = prompts[number]
        context = model.tokenizer(entry["prompt"], add_special_tokens=entry["add_special_tokens"])["input_ids"]
        scores = []
        for continuation in entry["continuations"]:
            tokens = model.tokenizer(continuation, add_special_tokens=False)["input_ids"]
            with torch.inference_mode():
                logprobs = model.model(input_ids=torch.tensor([context + tokens], device=model.model.device)).logits[0].float().log_softmax(-1)
            scores.append(float(sum(logprobs[len(context) - 1 + step, token] for step, token in enumerate(tokens))))
        return scores

    return alone


def first_divergence(tokens_a: list[int], tokens_b: list[int]) -> int:
    step = 0
    while step < min(len(tokens_a), len(tokens_b)) and tokens_a[step] == tokens_b[step]:
        step += 1
    return step


def compare_texts(reference: list[str], other: list[str], margin: Callable[[int, str, str], float | None]) -> dict:
    """Equal answers, or answers that part at a near-tie; `margin(i, a, b)` gives the gap between
    the two parting tokens for prompt i (None when they are not the model's top two)."""
    if len(reference) != len(other):
        return {"same_work": False, "why": f"{len(reference)} answers against {len(other)}"}
    parted, ties = [], []
    for number, (a, b) in enumerate(zip(reference, other)):
        if a == b:
            continue
        gap = margin(number, a, b)
        if gap is not None and gap < NEAR_TIE:
            ties.append({"request": number, "gap": gap})
        else:
            parted.append({"request": number, "equita": a, "peer": b, "gap": gap})
    result = {"same_work": not parted, "identical": len(reference) - len(parted) - len(ties), "near_ties": ties}
    if parted:
        result |= {"why": f"{len(parted)} answers differ beyond a near-tie", "differences": parted[:5]}
    return result


def tie_margin(model: TransformersModel, prompts: list[dict]) -> Callable[[int, str, str], float | None]:
    """Recompute, one prompt alone, the step where two answers part: |log p(a) - log p(b)| if both
    parting tokens are the model's top two there, else None. `prompts`: prompts.jsonl's entries."""

    def margin(number: int, a: str, b: str) -> float | None:
        entry = prompts[number]
        prompt = model.tokenizer(entry["prompt"], add_special_tokens=entry["add_special_tokens"])["input_ids"]
        tokens_a = model.tokenizer(a, add_special_tokens=False)["input_ids"]
        tokens_b = model.tokenizer(b, add_special_tokens=False)["input_ids"]
        step = first_divergence(tokens_a, tokens_b)
        eos = model.eos_ids[0] if model.eos_ids else None
        token_a = tokens_a[step] if step < len(tokens_a) else eos
        token_b = tokens_b[step] if step < len(tokens_b) else eos
        if token_a is None or token_b is None:
            return None
        with torch.inference_mode():
            ids = torch.tensor([prompt + tokens_a[:step]], device=model.model.device)
            logprobs = model.model(input_ids=ids).logits[0, -1].float().log_softmax(-1)
        top_two = set(logprobs.topk(2).indices.tolist())
        if {token_a, token_b} != top_two:
            return None
        return abs(float(logprobs[token_a] - logprobs[token_b]))

    return margin


# -- the machine's ceiling ----------------------------------------------------------------------


def matmul_rate(device: str = "cpu", dtype: str = "float32", size: int | None = None, repeats: int = 10) -> float:
    """Measured matrix-multiply rate (FLOP/s) on the bench's device, in its dtype: the ceiling the
    tools' FLOPs are set against (a GPU's bfloat16 rate is many times its float32 one). A GPU needs
    larger matrices to be kept busy, and its kernels are timed to their end."""
    device_ = torch.device(device)
    size = size or (2048 if device_.type == "cpu" else 8192)
    a = torch.randn(size, size, device=device_, dtype=getattr(torch, dtype))
    b = torch.randn(size, size, device=device_, dtype=getattr(torch, dtype))
    finish = torch.cuda.synchronize if device_.type == "cuda" else (lambda: None)
    for _ in range(3):
        a @ b
    finish()
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    finish()
    return 2 * size**3 * repeats / (time.perf_counter() - started)


# -- the whole benchmark ------------------------------------------------------------------------


def _summary(runs: list[dict], tokens: int, rate: float) -> dict:
    """A tool's runs: median times, tokens of work per second, the matrix work it computed (the
    same in every run) and its share of the matmul rate, peak memory."""
    run_s = [r["run_s"] for r in runs]
    median = statistics.median(run_s)
    flops = runs[0].get("matrix_flops")
    return {
        "runs": len(runs),
        "run_s": run_s,
        "median_run_s": median,
        "median_wall_s": statistics.median(r["wall_s"] for r in runs),
        "median_setup_s": statistics.median(r["setup_s"] for r in runs),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
        "peak_gpu_mib": max(r["peak_gpu_mib"] for r in runs) if all("peak_gpu_mib" in r for r in runs) else None,
        "tokens_per_s": tokens / median,
        "matrix_gflop": flops / 1e9 if flops is not None else None,
        "flops_per_work_token": flops / tokens if flops is not None and tokens else None,
        "ceiling_share": flops / median / rate if flops is not None else None,
    }


# The batch sizes a sweep tries, on the workload's first SWEEP_REQUESTS[kind] requests; and the one
# size both tools are also timed at. A log-likelihood request is ~10x cheaper than a generation:
# on 64 of Jobs' sentences a run took 2 to 7 s, its noise larger than the sizes' differences (the
# sweep picked lm-eval's 16, whose timed runs were 18% slower than its runs at 32), so scoring
# sweeps on 256.
SWEEP_SIZES = (8, 16, 32, 64)
SWEEP_REQUESTS = {"generate": 64, "loglikelihood": 256}
EQUAL_BATCH = 32


def batch_plan(batch_size, tools: list[str], suite: bool) -> dict:
    """The series to time: {series: {tool: batch size}}, or {"_sweep": True} to sweep first.

    "sweep" (the default): each tool at its own best fixed size, found by a short sweep, then
    both at EQUAL_BATCH. A suite is a whole `equita run`, too long to sweep: EQUAL_BATCH only.
    "auto": each tool's own automatic sizing (lm-eval's probe), labelled as such. A number: both at it.
    """
    if batch_size == "sweep":
        return {"equal": dict.fromkeys(tools, EQUAL_BATCH)} if suite else {"_sweep": True}
    return {"auto" if batch_size == "auto" else "given": dict.fromkeys(tools, batch_size)}


def sweep(tools: list[str], requests: int, kind: str, spec_for, folder: Path, log, repeats: int = 1) -> dict:
    """Per tool that batches (equita, lm-eval): milliseconds per request at each of SWEEP_SIZES on
    the first SWEEP_REQUESTS[kind] requests, and the fastest size. Sizes above the requests are not tried.

    Each size is run `repeats` times, the sizes in turn, and its fastest run counts: noise on a
    shared machine only ever slows a run down, and one slow run must not decide the size."""
    count = min(requests, SWEEP_REQUESTS[kind])
    found = {}
    for tool in (t for t in tools if t != "naive"):
        sizes = [size for size in SWEEP_SIZES if size <= max(count, SWEEP_SIZES[0])]
        trials: dict[int, list[float]] = {size: [] for size in sizes}
        for repetition in range(repeats):
            for size in sizes:
                result = run_worker(spec_for(tool, f"sweep{size}-{repetition}", size, "sweep", count), folder)
                trials[size].append(1000 * result["run_s"] / count)
                log(f"  sweep {tool} batch {size} #{repetition + 1}: {trials[size][-1]:.1f} ms per request")
        costs = {size: min(times) for size, times in trials.items()}
        found[tool] = {"requests": count, "ms_per_request": costs, "trials": trials, "chosen": min(costs, key=costs.get)}
    return found


def _time_series(name, workload, series, sizes, options, spec_for, folder, parts, prompts, suite, model, rate, log) -> dict:
    """Every tool of the series at its batch size, `repeats` times, alternating; then the checks that
    the work was the same, the summaries and the ratios."""
    tools = list(sizes)
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    for repetition in range(options.repeats):
        # Alternate who goes first, so drift in the machine's speed spreads over all tools.
        order = tools[repetition % len(tools) :] + tools[: repetition % len(tools)]
        for tool in order:
            result = run_worker(spec_for(tool, repetition, sizes[tool], series), folder / "runs" / series)
            runs[tool].append(result)
            log(f"  {name} {series} {tool} (batch {sizes[tool]}) #{repetition + 1}: {result['run_s']:.1f} s, peak {result['peak_rss_mib']:.0f} MiB")
    # Each task's work checked and counted on its own (the tokens its requests name); a suite adds its tasks up.
    checks, tokens = {}, 0
    for task, part in parts.items():
        task_runs = {tool: [_part(result, task, suite) for result in results] for tool, results in runs.items()}
        checks[task] = _agreement(task_runs, prompts[task], part["kind"], model)
        if part["kind"] == "generate":
            answers = task_runs["equita"][0]["answers"]
            part["generated_tokens"] = sum(len(model.tokenizer(text, add_special_tokens=False)["input_ids"]) for text in answers)
            part["work_tokens"] = part["prompt_tokens"] + part["generated_tokens"]
        else:
            part["work_tokens"] = part["scored_tokens"]
        tokens += part["work_tokens"]
    result = {"batch_sizes": sizes}
    result["agreement"] = checks[workload.task] if not suite else {tool: _all_agree({task: check[tool] for task, check in checks.items()}) for tool in runs}
    if suite:
        result["agreement_by_task"] = checks
    result["work_tokens"] = tokens
    result["batching"] = {tool: results[0].get("batching", {}) for tool, results in runs.items() if results[0].get("batching")}
    result["tools"] = {tool: _summary(results, tokens, rate) for tool, results in runs.items()}
    result["ratios"], result["targets"] = {}, {}
    equita = result["tools"]["equita"]
    for tool in tools:
        if tool == "equita":
            continue
        check = result["agreement"][tool]
        peer = result["tools"][tool]
        speed = peer["median_run_s"] / equita["median_run_s"] if check["same_work"] else None
        result["ratios"][tool] = {
            "speedup": speed,
            "memory_ratio": equita["peak_rss_mib"] / peer["peak_rss_mib"],
            **({} if check["same_work"] else {"withheld": check["why"]}),
        }
        if tool in workload.targets:
            target = workload.targets[tool]
            result["targets"][tool] = {"speedup": target, "met": speed is not None and speed >= target}
        if tool == "lm-eval":
            # Peak memory grows with the rows held at once: it says something of the tools only where
            # both hold as many (the equal series); at their own best sizes it is recorded, not judged.
            if sizes[tool] == sizes["equita"]:
                peak = "peak_gpu_mib" if equita["peak_gpu_mib"] is not None else "peak_rss_mib"
                result["targets"]["memory"] = {"at_most": "lm-eval", "met": equita[peak] <= peer[peak]}
            else:
                result["targets"]["memory"] = {"at_most": "lm-eval", "met": None, "batch_sizes": {"equita": sizes["equita"], tool: sizes[tool]}}
    return result


def bench(options: BenchOptions, log: Callable[[str], None] = print) -> dict:
    unknown = [name for name in options.workloads if name not in WORKLOADS]
    if unknown:
        raise BenchError(f"unknown workload {', '.join(unknown)}; valid: {', '.join(WORKLOADS)}")
    # A limit for a workload that is not run would be ignored without a word (a misspelt name, most likely).
    unknown = [name for name in options.limits if name not in WORKLOADS]
    if unknown:
        raise BenchError(f"--limit {', '.join(unknown)}: unknown workload; valid: {', '.join(WORKLOADS)}")
    idle = [name for name in options.limits if name not in options.workloads]
    if idle:
        raise BenchError(f"--limit {', '.join(idle)}: not among the workloads run ({', '.join(options.workloads)}); add it to --workloads or drop the limit")
    bad_tools = [tool for tool in options.tools if tool not in TOOLS]
    if bad_tools or "equita" not in options.tools:
        raise BenchError(f"tools must include equita and come from {', '.join(TOOLS)}; got {', '.join(options.tools)}")
    if options.repeats < 1 or (options.batch_size not in ("auto", "sweep") and (not isinstance(options.batch_size, int) or options.batch_size < 1)):
        raise BenchError("--repeats must be at least 1, and --batch-size sweep, auto or at least 1")
    if "lm-eval" in options.tools:
        try:
            lm_eval_version = metadata.version("lm_eval")
        except metadata.PackageNotFoundError:
            raise BenchError("lm-eval is not installed; run: pip install 'equita[bench]' (or leave it out with --tools equita,naive)") from None
    else:
        lm_eval_version = None
    model = load_model(options.model, device=options.device, dtype=options.dtype)
    folder_model = str(model.folder)
    options.out.mkdir(parents=True, exist_ok=True)
    rate = matmul_rate(options.device, options.dtype)
    log(f"matrix multiply: {rate / 1e9:.0f} GFLOP/s ({options.dtype} on {options.device}, {torch.get_num_threads()} CPU threads)")
    report = {
        "schema": BENCH_SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": model.info.as_dict(),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "matmul_gflops": rate / 1e9,
        },
        "versions": {
            "equita": metadata.version("equita"),
            "torch": torch.__version__,
            "transformers": metadata.version("transformers"),
            "lm_eval": lm_eval_version,
        },
        "settings": {"batch_size": options.batch_size, "repeats": options.repeats, "device": options.device, "dtype": options.dtype, "tools": list(options.tools)},
        "workloads": {},
    }
    for name in options.workloads:
        workload = WORKLOADS[name]
        tools = [tool for tool in workload.tools if tool in options.tools]
        folder = options.out / "work" / name
        described = prepare_workload(workload, model, folder, options, log)
        suite = described["kind"] == "suite"
        parts = described["parts"] if suite else {workload.task: described}
        prompts = {task: part.pop("prompts") for task, part in parts.items()}
        log(f"{name}: {described['requests']} requests, tools {', '.join(tools)}, {options.repeats} repetitions")

        def spec_for(tool: str, repetition, batch_size, series: str, requests: int | None = None) -> dict:
            return {
                "tool": tool,
                "repetition": repetition,
                "series": series,
                "workload_name": name,
                "workload": str(folder.resolve()),
                "task": workload.task,
                "kind": described["kind"],
                "parts": {task: {"kind": part["kind"], "lm_eval_task": part["lm_eval_task"]} for task, part in parts.items()},
                "model": folder_model,
                "batch_size": batch_size,
                "requests": requests,
                "device": options.device,
                "dtype": options.dtype,
                "add_bos_token": described["add_bos_token"],
                "max_length": described["max_length"],
                # The suite runs `equita run` itself, which finds the datasets as a user's run does.
                "datasets": options.datasets,
                "source_dir": str(options.source_dir.resolve()) if options.source_dir else None,
                "limit": described["limit"],
            }

        plan = batch_plan(options.batch_size, tools, suite)
        if plan.pop("_sweep", False):
            described["sweep"] = sweep(tools, described["requests"], described["kind"], spec_for, folder / "runs", log, options.repeats)
            # The naive loop has no batch (one prompt at a time): 1.
            plan = {"best": {tool: described["sweep"][tool]["chosen"] if tool in described["sweep"] else 1 for tool in tools}, "equal": dict.fromkeys(tools, EQUAL_BATCH)}
            plan["equal"].pop("naive", None)  # the naive loop has no batch: timed once, in the first series
        described["series"] = {}
        for series, sizes in plan.items():
            described["series"][series] = _time_series(name, workload, series, sizes, options, spec_for, folder, parts, prompts, suite, model, rate, log)
        # The first series is the headline (each tool at its own best fixed batch, when swept).
        first = next(iter(described["series"].values()))
        described.update({key: first[key] for key in ("agreement", "batching", "tools", "ratios", "targets", "work_tokens")})
        if suite:
            described["agreement_by_task"] = first["agreement_by_task"]
        report["workloads"][name] = described
        write_atomic(options.out / "bench.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_atomic(options.out / "bench.md", markdown(report))
    return report


def _part(result: dict, task: str, suite: bool) -> dict:
    """One task's answers and prompts from a run: the whole run, or its share of a suite's."""
    if not suite:
        return result
    return {"answers": result["answers"][task], "prompts": result["prompts"][task]}


def _all_agree(checks: dict[str, dict]) -> dict:
    """A suite did the same work when each of its tasks did; the first task that did not says why."""
    for task, check in checks.items():
        if not check["same_work"]:
            return {**check, "why": f"{task}: {check['why']}"}
    ties = [{"task": task, **tie} for task, check in checks.items() for tie in check.get("near_ties", [])]
    worst = max((check["max_logprob_diff"] for check in checks.values() if "max_logprob_diff" in check), default=None)
    identical = sum(check.get("identical", 0) for check in checks.values())
    rechecks = [check["recheck"] for check in checks.values() if "recheck" in check]
    recheck = {
        "requests_beyond_tolerance": sum(r["requests_beyond_tolerance"] for r in rechecks),
        "rechecked": sum(r["rechecked"] for r in rechecks),
        "equita_max_error": max(r["equita_max_error"] for r in rechecks),
        "peer_max_error": max(r["peer_max_error"] for r in rechecks),
    } if rechecks else None  # fmt: skip
    return {"same_work": True, "identical": identical, "near_ties": ties, **({"max_logprob_diff": worst} if worst is not None else {}),
            **({"recheck": recheck} if recheck else {})}  # fmt: skip


def _agreement(runs: dict[str, list[dict]], prompts: list[dict], kind: str, model: TransformersModel) -> dict:
    """Each tool against equita's first run (and equita's own repetitions against each other)."""
    reference = runs["equita"][0]["answers"]
    texts = [entry["prompt"] for entry in prompts]
    margin = tie_margin(model, prompts)
    agreement = {}
    for tool, results in runs.items():
        checks = []
        for result in results if tool != "equita" else results[1:]:
            if result["prompts"] != texts:
                checks.append({"same_work": False, "why": "the tool read different prompt texts"})
            elif kind == "generate":
                checks.append(compare_texts(reference, result["answers"], margin))
            else:
                checks.append(compare_logprobs(reference, result["answers"], score_alone(model, prompts)))
        failed = [check for check in checks if not check["same_work"]]
        agreement[tool] = failed[0] if failed else (checks[0] if checks else {"same_work": True})
    return agreement


# -- the Markdown summary -------------------------------------------------------------------------


def batching_lines(batching: dict) -> list[str]:
    """How each tool sized its batches: equita's choice, trials and slot utilisation; lm-eval's detected sizes."""
    lines = []
    for tool, record in batching.items():
        # A suite's equita record is per task; a single workload's is the task's own.
        records = record if all(isinstance(value, dict) for value in record.values()) else {"": record}
        said = []
        for task, one in records.items():
            if "batch_size" not in one and "detected_batch_sizes" not in one:
                continue
            text = f"{task + ': ' if task else ''}batch {one.get('batch_size')}"
            if one.get("detected_batch_sizes"):
                text = f"{task + ': ' if task else ''}auto, detected {', '.join(str(size) for size in one['detected_batch_sizes'])}"
            if one.get("batch_size_trials"):
                text += " (auto; ms per row: " + ", ".join(f"{rows}: {cost:.1f}" for rows, cost in one["batch_size_trials"].items()) + ")"
            if one.get("slot_utilisation") is not None:
                text += f", slot utilisation {100 * one['slot_utilisation']:.1f}%"
            said.append(text)
        if said:
            lines.append(f"- {tool} batches: " + "; ".join(said))
    return lines


SERIES_TITLES = {"best": "Each tool at its own best fixed batch size", "equal": "Both at the same batch size", "auto": "Each tool's own automatic sizing (lm-eval: its auto probe)", "given": "The batch size given"}


def _series_table(workload: dict) -> list[str]:
    """One series' table: each tool's times, throughput, share of the ceiling, memory, ratio and same-work check."""
    from tabulate import tabulate

    table = []
    for tool, summary in workload["tools"].items():
        ratio = workload["ratios"].get(tool)
        if ratio is None:
            speed = "—"
        elif ratio["speedup"] is None:
            speed = "withheld: " + ratio["withheld"]
        else:
            speed = f"{ratio['speedup']:.2f}x"
        agreement = workload["agreement"].get(tool, {})
        if tool == "equita":
            same = "reference" if agreement.get("same_work", True) else "NOT repeatable: " + agreement["why"]
        elif not agreement.get("same_work"):
            same = "no: " + agreement.get("why", "")
        else:
            found = []
            if "identical" in agreement:
                found.append(f"{agreement['identical']} identical, {len(agreement['near_ties'])} near-ties")
            if "max_logprob_diff" in agreement:
                found.append(f"max diff {agreement['max_logprob_diff']:.1e}")
            if "recheck" in agreement:
                recheck = agreement["recheck"]
                found.append(
                    f"{recheck['requests_beyond_tolerance']} requests beyond {LOGPROB_TOLERANCE:g}, the {recheck['rechecked']} worst rescored alone: "
                    f"equita off by {recheck['equita_max_error']:.1e}, {tool} by {recheck['peer_max_error']:.1e}"
                )
            same = f"yes ({'; '.join(found)})"
        computed = "—" if summary.get("matrix_gflop") is None else f"{summary['matrix_gflop']:,.0f}"
        share = "—" if summary.get("ceiling_share") is None else f"{100 * summary['ceiling_share']:.0f}%"
        peak = f"{summary['peak_rss_mib']:.0f}" + (f" (GPU {summary['peak_gpu_mib']:.0f})" if summary.get("peak_gpu_mib") is not None else "")
        table.append([tool, f"{summary['median_run_s']:.1f}", f"{summary['median_wall_s']:.1f}", f"{summary['tokens_per_s']:.0f}",
                      computed, share, peak, speed, same])  # fmt: skip
    headers = ["tool", "run s", "wall s", "tokens/s", "GFLOP computed", "of ceiling", "peak MiB", "equita speed-up", "same work"]
    lines = [tabulate(table, headers=headers, tablefmt="github")]
    lines += ["", *batching_lines(workload.get("batching", {}))]
    targets = workload.get("targets", {})
    if targets:
        met = ", ".join(_target_text(tool, target) for tool, target in targets.items())
        lines += ["", f"Targets: {met}."]
    lines.append("")
    return lines


def _target_text(tool: str, target: dict) -> str:
    if "speedup" in target:
        return f"{tool}: {'met' if target['met'] else 'NOT met'} (target {target['speedup']}x)"
    if target["met"] is None:
        sizes = ", ".join(f"{name} {size}" for name, size in target["batch_sizes"].items())
        return f"{tool}: not judged at different batch sizes ({sizes} rows; see the equal-batch series)"
    return f"{tool}: {'met' if target['met'] else 'NOT met'} (peak at most {target['at_most']}'s)"


def markdown(report: dict) -> str:
    settings, machine = report["settings"], report["machine"]
    lines = [
        f"# equita bench: {report['model']['id']}",
        "",
        f"{machine['processor']}, {machine['cpus']} CPUs, {machine['torch_threads']} torch threads, "
        f"{settings['dtype']} matmul on {settings['device']} {machine['matmul_gflops']:.0f} GFLOP/s; device {settings['device']}, {settings['dtype']}, "
        f"batch size {settings['batch_size']}, {settings['repeats']} repetitions (medians). "
        f"equita {report['versions']['equita']}, lm-eval {report['versions']['lm_eval']}, transformers {report['versions']['transformers']}, torch {report['versions']['torch']}.",
        "",
    ]
    for name, workload in report["workloads"].items():
        limit = f"subset of {workload['requests']} (--limit {workload['limit']})" if workload["limit"] else f"all {workload['requests']}"
        lines += [
            f"## {name} ({workload['task']}, {workload['kind']}, {limit} requests)",
            "",
            f"{workload['work_tokens']:,} tokens of work (prompt and answer tokens as the requests name them: tokens/s). "
            f"GFLOP computed: the linear layers' multiply-adds each tool ran, padding included, work it avoided not; "
            f"of ceiling: those per second against the measured {machine['matmul_gflops']:.0f} GFLOP/s.",
            "",
        ]
        if workload.get("sweep"):
            swept = "; ".join(f"{tool}: " + ", ".join(f"{size}: {ms:.1f}" for size, ms in found["ms_per_request"].items()) + f" -> {found['chosen']}"
                              for tool, found in workload["sweep"].items())  # fmt: skip
            runs = len(next(iter(next(iter(workload["sweep"].values())).get("trials", {1: [0]}).values())))
            each = "one run each" if runs == 1 else f"fastest of {runs} runs each"
            lines += [f"Batch-size sweep (ms per request on the first {next(iter(workload['sweep'].values()))['requests']} requests, {each}): {swept}.", ""]
        for series, result in workload.get("series", {"given": workload}).items():
            sizes = result.get("batch_sizes", {})
            lines += [f"### {SERIES_TITLES.get(series, series)}: " + ", ".join(f"{tool} {size}" for tool, size in sizes.items()), ""]
            lines += _series_table(result)
        lines.append("")
    return "\n".join(lines)
