"""One timed benchmark run, in a process of its own: `python -m equita.runners.bench_worker SPEC OUT`.

`equita bench` starts one such process per (tool, workload, repetition), so every run starts
cold, its peak memory is its own (the parent reads it from the kernel when the process
exits), and tools alternate on the same machine. The process imports only what its tool
needs. SPEC is a JSON file the parent wrote:

    tool        "equita", "lm-eval" or "naive"
    workload    folder holding rows.jsonl (dataset rows), prompts.jsonl (the rendered prompts)
                and, for lm-eval, the task YAML
    task        the equita task name
    lm_eval_task  the YAML's task name
    model       checkpoint folder (all tools load the same weights)
    batch_size, device, dtype, add_bos_token

OUT receives {"answers": [...], "setup_s", "run_s", ...}: for generation an answer is the
text, for scoring the list of log-probabilities of the request's continuations.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_equita(spec: dict) -> dict:
    """equita's runner, as `equita run` drives it: task rows -> requests -> TransformersModel.answer."""
    started = time.perf_counter()
    from equita.runners.models import load_model
    from equita.runners.requests import Generate
    from equita.runners.tasks import EVAL_TASKS

    model = load_model(spec["model"], device=spec["device"], dtype=spec["dtype"])
    task = EVAL_TASKS[spec["task"]]
    rows = _read_jsonl(Path(spec["workload"]) / "rows.jsonl")
    setup = time.perf_counter() - started

    started = time.perf_counter()
    requests = [task.request(row) for row in rows]
    answers: list = [None] * len(requests)
    for indices, responses in model.answer(requests, spec["batch_size"]):
        for index, response in zip(indices, responses):
            answers[index] = response["text"] if isinstance(requests[index], Generate) else response["logprobs"]
    return {"answers": answers, "setup_s": setup, "run_s": time.perf_counter() - started, "prompts": [model.render(r) for r in requests]}


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
    )
    manager = TaskManager(include_path=str(Path(spec["workload"]) / "lm_eval"))
    setup = time.perf_counter() - started

    started = time.perf_counter()
    output = simple_evaluate(model=model, tasks=[spec["lm_eval_task"]], task_manager=manager, log_samples=True)
    elapsed = time.perf_counter() - started
    samples = sorted(output["samples"][spec["lm_eval_task"]], key=lambda sample: sample["doc_id"])
    answers, prompts = [], []
    for sample in samples:
        if spec["kind"] == "generate":
            answers.append(sample["filtered_resps"][0])
            prompts.append(sample["arguments"][0][0])
        else:
            answers.append([float(choice[0]) for choice in sample["filtered_resps"]])
            prompts.append(sample["arguments"][0][0])
    return {"answers": answers, "setup_s": setup, "run_s": elapsed, "prompts": prompts}


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
    with torch.inference_mode():
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
    return {"answers": answers, "setup_s": setup, "run_s": time.perf_counter() - started, "prompts": [p["prompt"] for p in prompts]}


TOOLS = {"equita": run_equita, "lm-eval": run_lm_eval, "naive": run_naive}


def main(argv: list[str]) -> int:
    spec_path, out_path = Path(argv[0]), Path(argv[1])
    spec = json.loads(spec_path.read_text())
    result = TOOLS[spec["tool"]](spec)
    temporary = out_path.with_suffix(".tmp")
    temporary.write_text(json.dumps(result, ensure_ascii=False))
    temporary.replace(out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
