"""One timed benchmark run, in a process of its own: `python -m equita.runners.bench.worker SPEC OUT`.

`equita bench` starts one such process per (tool, workload, repetition), so every run starts
cold, its peak memory is its own (the parent reads it from the kernel when the process
exits), and tools alternate on the same machine. The process imports only what its tool
needs. SPEC is a JSON file the parent wrote:

    tool        "equita", "lm-eval" or "naive"
    workload    folder holding rows.jsonl (dataset rows), prompts.jsonl (the rendered prompts)
                and, for lm-eval, the task YAML; for a suite, one such folder per task
    task        the equita task name, or for a suite the task group `equita run` runs
    kind        "generate", "loglikelihood" or "suite"
    parts       task -> {kind, lm_eval_task}
    model       checkpoint folder (all tools load the same weights)
    batch_size  a number, or "auto" (equita's own; lm-eval's "auto")
    requests    None, or the number of the workload's first requests to run (a batch-size sweep)
    device, dtype, add_bos_token, max_length (of the longest request, for lm-eval's auto probe)
    datasets, source_dir, limit   where a suite's `equita run` finds its datasets, and its --limit

OUT receives {"answers", "prompts", "setup_s", "run_s", "matrix_flops", ...} (and "peak_gpu_mib" on a GPU): for generation an
answer is the text, for scoring the list of log-probabilities of the request's continuations; for
a suite, both are dicts keyed by task. `matrix_flops` is the multiply-add work of every linear
layer the tool ran during the timed run (2 x rows x inputs x outputs, padding included), counted
by a hook: the work each tool chose to compute, which the bench sets against the machine's
matmul rate.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class MatrixFlops:
    """Counts 2 x rows x in x out for every `torch.nn.Linear` call while active (a global forward
    hook: it sees every model a tool loads, in whatever code path). Attention's own products
    are not counted: on these workloads' short contexts they are a few percent."""

    def __init__(self):
        self.flops = 0
        self._handle = None

    def _hook(self, module, inputs, output):
        import torch

        if isinstance(module, torch.nn.Linear) and inputs:
            self.flops += 2 * inputs[0].numel() * module.out_features

    def __enter__(self):
        import torch

        self._handle = torch.nn.modules.module.register_module_forward_hook(self._hook)
        return self

    def __exit__(self, *exc):
        self._handle.remove()


def run_equita(spec: dict) -> dict:
    """equita's runner, as `equita run` drives it: task rows -> requests -> TransformersModel.answer."""
    started = time.perf_counter()
    from ..backends.models import load_model
    from ..requests import Generate
    from ..tasks import EVAL_TASKS

    model = load_model(spec["model"], device=spec["device"], dtype=spec["dtype"])
    task = EVAL_TASKS[spec["task"]]
    rows = _read_jsonl(Path(spec["workload"]) / "rows.jsonl")[: spec.get("requests")]
    setup = time.perf_counter() - started

    started = time.perf_counter()
    requests = [task.request(row) for row in rows]
    answers: list = [None] * len(requests)
    batching: dict = {}
    with MatrixFlops() as counted:
        for indices, responses in model.answer(requests, spec["batch_size"], stats=batching):
            for index, response in zip(indices, responses):
                answers[index] = response["text"] if isinstance(requests[index], Generate) else response["logprobs"]
    elapsed = time.perf_counter() - started
    return {"answers": answers, "setup_s": setup, "run_s": elapsed, "prompts": [model.render(r) for r in requests], "batching": batching,
            "matrix_flops": counted.flops}  # fmt: skip


def run_equita_suite(spec: dict) -> dict:
    """`equita run` itself, on a fresh --out: datasets, requests, answers, metrics, results and report."""
    import shutil

    from ..results.contract import read_samples
    from ..run import RunOptions, run

    out = Path(spec["workload"]) / "runs" / f"equita-{spec['repetition']}-out"
    shutil.rmtree(out, ignore_errors=True)  # a fresh folder: nothing answered from an earlier run's cache
    started = time.perf_counter()
    options = RunOptions(model=spec["model"], out=out, tasks=spec["task"], datasets=spec["datasets"],
                         source_dir=Path(spec["source_dir"]) if spec["source_dir"] else None, limit=spec["limit"],
                         batch_size=spec["batch_size"], device=spec["device"], dtype=spec["dtype"])  # fmt: skip
    with MatrixFlops() as counted:
        results = run(options, log=lambda message: print(message, flush=True))
    elapsed = time.perf_counter() - started
    load = results["timings"]["model_load_s"]
    answers: dict = {task: [] for task in spec["parts"]}
    prompts: dict = {task: [] for task in spec["parts"]}
    for sample in read_samples(out / "samples.jsonl"):
        response = sample["response"]
        answers[sample["task"]].append(response["text"] if "text" in response else response["logprobs"])
        prompts[sample["task"]].append(sample["prompt"])
    batching = {task: results["tasks"][task]["timings"] for task in spec["parts"]}
    # The model load is setup, as for lm-eval (whose model is built before simple_evaluate).
    return {"answers": answers, "prompts": prompts, "setup_s": load, "run_s": elapsed - load, "batching": batching, "matrix_flops": counted.flops}


def run_lm_eval(spec: dict) -> dict:
    """lm-evaluation-harness's own pipeline (HFLM + simple_evaluate) on the YAML task written for this workload."""
    started = time.perf_counter()
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    model = HFLM(
        pretrained=spec["model"],
        batch_size=spec["batch_size"],
        device=spec["device"],
        dtype=spec["dtype"],
        add_bos_token=spec["add_bos_token"],
        # Where lm-eval sizes its own batches, it probes them on sequences of max_length tokens:
        # the longest request, as a user who knows the workload would set it.
        **({"max_length": spec["max_length"]} if spec["batch_size"] == "auto" else {}),
    )
    detected: list[int] = []  # the batch sizes lm-eval's auto settles on, recorded as it finds them
    probe = model._detect_batch_size

    def recording_probe(*args, **kwargs):
        detected.append(probe(*args, **kwargs))
        return detected[-1]

    model._detect_batch_size = recording_probe
    suite = spec["kind"] == "suite"
    folders = [Path(spec["workload"]) / task / "lm_eval" for task in spec["parts"]] if suite else [Path(spec["workload"]) / "lm_eval"]
    manager = TaskManager(include_path=[str(folder) for folder in folders])
    setup = time.perf_counter() - started

    started = time.perf_counter()
    names = {part["lm_eval_task"]: task for task, part in spec["parts"].items()}
    with MatrixFlops() as counted:
        output = simple_evaluate(model=model, tasks=list(names), task_manager=manager, log_samples=True, limit=spec.get("requests"))
    elapsed = time.perf_counter() - started
    answers: dict = {}
    prompts: dict = {}
    for name, task in names.items():
        samples = sorted(output["samples"][name], key=lambda sample: sample["doc_id"])
        generate = spec["parts"][task]["kind"] == "generate"
        answers[task] = [sample["filtered_resps"][0] if generate else [float(choice[0]) for choice in sample["filtered_resps"]] for sample in samples]
        prompts[task] = [sample["arguments"][0][0] for sample in samples]
    if not suite:
        (task,) = names.values()
        answers, prompts = answers[task], prompts[task]
    batching = {"batch_size": spec["batch_size"], **({"detected_batch_sizes": detected} if detected else {})}
    return {"answers": answers, "setup_s": setup, "run_s": elapsed, "prompts": prompts, "batching": batching, "matrix_flops": counted.flops}


def run_naive(spec: dict) -> dict:
    """The plain loop of P-AT's reference code: one prompt at a time through `model.generate`."""
    started = time.perf_counter()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[spec["dtype"]]
    model = AutoModelForCausalLM.from_pretrained(spec["model"], dtype=dtype).to(spec["device"]).eval()
    prompts = _read_jsonl(Path(spec["workload"]) / "prompts.jsonl")
    setup = time.perf_counter() - started

    started = time.perf_counter()
    answers = []
    with torch.inference_mode(), MatrixFlops() as counted:
        for prompt in prompts:
            inputs = tokenizer(prompt["prompt"], return_tensors="pt", add_special_tokens=prompt["add_special_tokens"]).to(spec["device"])
            stop = prompt["stop"] or None
            output = model.generate(
                **inputs,
                max_new_tokens=prompt["max_new_tokens"],
                do_sample=False,
                pad_token_id=tokenizer.eos_token_id,
                stop_strings=stop,
                tokenizer=tokenizer if stop else None,
            )
            text = tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
            cut = min((text.find(s) for s in prompt["stop"] if s in text), default=len(text))
            answers.append(text[:cut])
    return {"answers": answers, "setup_s": setup, "run_s": time.perf_counter() - started, "prompts": [p["prompt"] for p in prompts], "matrix_flops": counted.flops}


TOOLS = {"equita": run_equita, "lm-eval": run_lm_eval, "naive": run_naive}


def main(argv: list[str]) -> int:
    spec_path, out_path = Path(argv[0]), Path(argv[1])
    spec = json.loads(spec_path.read_text())
    tool = run_equita_suite if spec["tool"] == "equita" and spec["kind"] == "suite" else TOOLS[spec["tool"]]
    result = tool(spec)
    if spec["device"].startswith("cuda"):
        import torch

        # On a GPU the memory that bounds the batch is the device's; the kernel's count is the host's.
        result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    temporary = out_path.with_suffix(".tmp")
    temporary.write_text(json.dumps(result, ensure_ascii=False))
    temporary.replace(out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
