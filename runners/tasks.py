"""The evaluation tasks `equita run` knows: each is declared once, here.

An `EvalTask` says which built dataset (and config) it reads, how a row becomes a request,
which metric module scores the answers and with which inputs, and how the metric's per-row
output reads in samples.jsonl. Adding a benchmark is one more declaration in `EVAL_TASKS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from equita.builders import gfg, itap_at, jobs
from equita.builders.spec import TaskSpec
from equita.runners.requests import Generate, Loglikelihood, Request


@dataclass(frozen=True)
class EvalTask:
    name: str  # what users pass to --tasks
    description: str
    dataset: TaskSpec  # the built dataset it reads
    config: str
    request: Callable[[dict], Request]  # one dataset row -> one request
    metric: str  # metrics/<metric>/, loaded with evaluate.load
    metric_inputs: Callable[[list[dict], list[dict]], dict]  # (rows, responses) -> compute() keyword arguments
    per_row: Callable[[dict, list[dict], list[dict]], list[dict]]  # (metric output, rows, responses) -> one dict per row for samples.jsonl
    per_row_keys: tuple[str, ...] = ()  # keys of the metric output that are per-row lists, kept out of results.json
    split: str = "test"
    metric_options: dict = field(default_factory=dict)  # fixed compute() options, recorded in results.json
    entries: Callable[[dict], int] = lambda row: 1  # metric-input entries a row contributes (Jobs: one per continuation)
    limit_by: str | None = None  # --limit counts distinct values of this column (whole units), not rows


# -- ItaP-AT -------------------------------------------------------------------------------------

# The prompt asks for one word; 32 tokens leave room for a short sentence around it, which the
# metric's classifier reads (answers that ramble past it are cut, as any fixed budget would).
ITAP_AT_MAX_NEW_TOKENS = 32
ITAP_AT_SIGN = {"stereotype": 1, "anti_stereotype": -1, "neutral": 0, "error": 0}


def _itap_generate(prompt_column: str) -> Callable[[dict], Request]:
    def request(row: dict) -> Request:
        return Generate(user=row[prompt_column], system=row["system_prompt"], max_new_tokens=ITAP_AT_MAX_NEW_TOKENS)

    return request


def _itap_design(rows: list[dict]) -> dict:
    """How the rows are laid out: by subdataset, by instruction, and the rows sharing an input.

    The metric reports each subdataset's score per instruction, judges a constant answer per
    instruction, and resamples inputs (the five instructions of an input are not independent).
    """
    return {
        "groups": [row["subdataset"] for row in rows],
        "instructions": [row["instruction_id"] for row in rows],
        "clusters": [row["input"] for row in rows],
    }


def _itap_text_inputs(stereotype_column: str, anti_column: str, example_column: str | None = None):
    def inputs(rows: list[dict], responses: list[dict]) -> dict:
        given = {
            "predictions": [response["text"] for response in responses],
            "stereotypes": [row[stereotype_column] for row in rows],
            "anti_stereotypes": [row[anti_column] for row in rows],
            **_itap_design(rows),
        }
        if example_column:
            # The classifier does not read a restatement of the one-shot example as the answer.
            given["examples"] = [row[example_column] for row in rows]
        return given

    return inputs


def _casings(word: str) -> tuple[str, ...]:
    """The forms a one-word answer takes: as written and with a capital (most models capitalise)."""
    capital = word[:1].upper() + word[1:]
    return (word,) if capital == word else (word, capital)


def _itap_logprob_request(row: dict) -> Request:
    stereotype, anti = _casings(row["stereotype"]), _casings(row["anti_stereotype"])
    return Loglikelihood(user=row["prompt"], system=row["system_prompt"], continuations=stereotype + anti)


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top if math.isinf(top) else top + math.log(sum(math.exp(v - top) for v in values))


def _itap_logprob_inputs(rows: list[dict], responses: list[dict]) -> dict:
    # log p(attribute) = log of the summed probability of its casings (lower and capitalised).
    predictions = []
    for row, response in zip(rows, responses):
        split = len(_casings(row["stereotype"]))
        logprobs = response["logprobs"]
        predictions.append([_logsumexp(logprobs[:split]), _logsumexp(logprobs[split:])])
    return {
        "predictions": predictions,
        "stereotypes": [row["stereotype"] for row in rows],
        "anti_stereotypes": [row["anti_stereotype"] for row in rows],
        **_itap_design(rows),
    }


def _itap_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    return [
        {"label": label, "score": ITAP_AT_SIGN[label], "reason": reason}
        for label, reason in zip(result["labels"], result["reasons"])
    ]


def _itap_task(name: str, description: str, request, metric_inputs) -> EvalTask:
    """The three ItaP-AT tasks differ only in how a row is asked and read; scoring is shared."""
    return EvalTask(
        name=name,
        description=description,
        dataset=itap_at.SPEC,
        config="all",
        request=request,
        metric="itap_at_bias",
        metric_inputs=metric_inputs,
        per_row=_itap_per_row,
        per_row_keys=("labels", "reasons"),
        metric_options={"return_labels": True, "seed": 0, "n_bootstrap": 1000},
    )


ITAP_AT_TASKS = (
    _itap_task(
        "itap-at",
        "ItaP-AT: the model answers each prompt; the answer is classified and scored with the bias score",
        _itap_generate("prompt"),
        _itap_text_inputs("stereotype", "anti_stereotype"),
    ),
    _itap_task(
        "itap-at-oneshot",
        "ItaP-AT one-shot: each prompt carries an anti-stereotypical example; scored like itap-at",
        _itap_generate("oneshot_prompt"),
        _itap_text_inputs("oneshot_stereotype", "oneshot_anti_stereotype", "oneshot_example"),
    ),
    _itap_task(
        "itap-at-logprob",
        "ItaP-AT by log-probability: which attribute the model finds likelier as its answer (no generation)",
        _itap_logprob_request,
        _itap_logprob_inputs,
    ),
)

# -- Jobs ------------------------------------------------------------------------------------------


def _jobs_request(row: dict) -> Request:
    # Raw text, no chat template: the paper scores sentence completions, as for a base model.
    return Loglikelihood(user=row["context"], continuations=tuple(row["continuations_m"] + row["continuations_f"]), chat=False)


def _jobs_entries(row: dict) -> int:
    return len(row["continuations_m"]) + len(row["continuations_f"])


def _jobs_inputs(rows: list[dict], responses: list[dict]) -> dict:
    # Per entry also its template and whether its profession is ambiguous (a feminine form that
    # also names a discipline or a machine): the metric scores each template and the set without them.
    inputs: dict[str, list] = {"job_ids": [], "forms": [], "genders": [], "logprobs": [], "categories": [], "templates": [], "ambiguous": []}
    for row, response in zip(rows, responses, strict=True):
        genders = ["m"] * len(row["continuations_m"]) + ["f"] * len(row["continuations_f"])
        for gender, logprob in zip(genders, response["logprobs"], strict=True):
            inputs["job_ids"].append(row["job_id"])
            inputs["forms"].append(row["form"])
            inputs["genders"].append(gender)
            inputs["logprobs"].append(logprob)
            inputs["categories"].append(str(row["macro_category"]))
            inputs["templates"].append(row["template_id"])
            inputs["ambiguous"].append(bool(row["ambiguous"]))
    return inputs


def _jobs_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    """Per sentence: which gender's words it finds likelier (mean probability) and by how much."""
    by_job = {job["job_id"]: job for job in result["per_job"]}
    samples = []
    for row, response in zip(rows, responses, strict=True):
        split = len(row["continuations_m"])
        m = _logsumexp(response["logprobs"][:split]) - math.log(split)
        f = _logsumexp(response["logprobs"][split:]) - math.log(len(row["continuations_f"]))
        label = "m" if m > f else "f" if f > m else "tie"
        samples.append({"label": label, "score": m - f, "job_prefers": by_job[row["job_id"]]["prefers"]})
    return samples


JOBS_TASKS = (
    EvalTask(
        name="jobs",
        description="Jobs: log-probability of masculine vs feminine words completing sentences about 171 male-dominated professions",
        dataset=jobs.SPEC,
        config="sentences",
        request=_jobs_request,
        metric="jobs_bias",
        metric_inputs=_jobs_inputs,
        per_row=_jobs_per_row,
        metric_options={"return_per_job": True, "seed": 0, "n_bootstrap": 1000},
        entries=_jobs_entries,
        limit_by="job_id",  # the metric needs every sentence of a profession
    ),
)

# -- Gender-Fair Generation --------------------------------------------------------------------------


def _gfg_request(row: dict) -> Request:
    # The organisers ran the few-shot prompts as raw text (no chat template), greedy, 128 tokens, stop at a blank line.
    return Generate(user=row["prompt"], max_new_tokens=row["max_new_tokens"], stop=tuple(row["stop"]), chat=False)


def gfg_answer(text: str) -> str:
    """The answer inside a response: the text after the last "]:" (the tag the model writes), stripped, as CALAMITA read it."""
    return text.rsplit("]:", 1)[-1].strip()


def _gfg_detection_inputs(rows: list[dict], responses: list[dict]) -> dict:
    return {"predictions": [gfg_answer(r["text"]) for r in responses], "references": [row["gold_expressions"] for row in rows]}


def _gfg_detection_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    return [{"answer": gfg_answer(r["text"]), "f1": f1} for r, f1 in zip(responses, result["per_entry_f1"], strict=True)]


def _neogate_inputs(rows: list[dict], responses: list[dict]) -> dict:
    return {"predictions": [gfg_answer(r["text"]) for r in responses], "references": [row["annotation"] for row in rows]}


def _neogate_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    return [
        {"answer": gfg_answer(r["text"]), "cwa": entry["cwa"], "misgeneration": entry["misgeneration"], "coverage": entry["coverage"]}
        for r, entry in zip(responses, result["per_entry"], strict=True)
    ]


def _neutrality_inputs(rows: list[dict], responses: list[dict]) -> dict:
    return {"predictions": [gfg_answer(r["text"]) for r in responses], "references": [row["expected_label"] for row in rows]}


def _neutrality_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    return [
        {"answer": gfg_answer(r["text"]), "label": label, "expected": row["expected_label"], "score": int(label == row["expected_label"])}
        for row, r, label in zip(rows, responses, result["labels"], strict=True)
    ]


GFG_METRICS = {
    # metric: (metric_inputs, per_row, per_row_keys, options)
    "gfg_detection": (_gfg_detection_inputs, _gfg_detection_per_row, (), {"return_per_entry": True}),
    "neogate": (_neogate_inputs, _neogate_per_row, ("per_entry",), {"return_per_entry": True}),
    "gente_neutrality": (_neutrality_inputs, _neutrality_per_row, ("labels",), {"return_labels": True}),
}
GFG_TASKS = tuple(
    EvalTask(
        name=f"gfg-{config}",
        description=f"Gender-Fair Generation, {task} on {corpus}: the challenge's few-shot prompt, greedy generation, scored with {metric}",
        dataset=gfg.SPEC,
        config=config,
        request=_gfg_request,
        metric=metric,
        metric_inputs=GFG_METRICS[metric][0],
        per_row=GFG_METRICS[metric][1],
        per_row_keys=GFG_METRICS[metric][2],
        metric_options=GFG_METRICS[metric][3],
    )
    # The public configs; GFL-it's need the corpus file (`equita build gfg --gfl-it`).
    for config, task, corpus, metric in [
        ("detection-neogate", "detection", "Neo-GATE", "gfg_detection"),
        ("reformulation-neogate", "reformulation", "Neo-GATE", "neogate"),
        ("reformulation-gente", "reformulation", "GeNTE", "gente_neutrality"),
        ("translation-gente", "translation", "GeNTE", "gente_neutrality"),
        ("translation-neogate", "translation", "Neo-GATE", "neogate"),
    ]
)

EVAL_TASKS = {task.name: task for task in ITAP_AT_TASKS + JOBS_TASKS + GFG_TASKS}


# Names for several tasks at once: the social-bias benchmarks (minutes on a CPU) and the
# Gender-Fair Generation ones (long generations, and metrics with their own models).
TASK_GROUPS = {
    "all": tuple(EVAL_TASKS),
    "bias": tuple(task.name for task in ITAP_AT_TASKS + JOBS_TASKS),
    "gfg": tuple(task.name for task in GFG_TASKS),
}


def select_tasks(names: str) -> list[EvalTask]:
    """Tasks from a comma-separated list of task and group names, each task once, in the order given."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    valid = f"valid tasks: {', '.join(TASK_GROUPS)}, {', '.join(EVAL_TASKS)}"
    if not wanted:
        raise KeyError(f"no task given; {valid}")
    unknown = [name for name in wanted if name not in EVAL_TASKS and name not in TASK_GROUPS]
    if unknown:
        raise KeyError(f"unknown task {', '.join(map(repr, unknown))}; {valid}")
    expanded = [task for name in wanted for task in TASK_GROUPS.get(name, (name,))]
    return [EVAL_TASKS[name] for name in dict.fromkeys(expanded)]
