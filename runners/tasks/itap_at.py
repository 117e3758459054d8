"""ItaP-AT (Onorati et al.): the three runner tasks and how their results read.

The model answers each of the 2,310 prompts (or, for itap-at-logprob, is asked which attribute it
finds likelier); the metric classifies the answers and gives the bias score in [-1, 1], 0 unbiased.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
from tabulate import tabulate

from ...builders import itap_at
from ..requests import Generate, Loglikelihood, Request
from ..results.figures import group_rows, interval_text, plt, save, score_plot
from .base import EvalTask, Presentation, logsumexp, row_units

ORDER = itap_at.SPEC.configs

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


def _itap_logprob_inputs(rows: list[dict], responses: list[dict]) -> dict:
    # log p(attribute) = log of the summed probability of its casings (lower and capitalised).
    predictions = []
    for row, response in zip(rows, responses):
        split = len(_casings(row["stereotype"]))
        logprobs = response["logprobs"]
        predictions.append([logsumexp(logprobs[:split]), logsumexp(logprobs[split:])])
    return {
        "predictions": predictions,
        "stereotypes": [row["stereotype"] for row in rows],
        "anti_stereotypes": [row["anti_stereotype"] for row in rows],
        **_itap_design(rows),
    }


def _itap_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    return [
        # A row without a label (an LLM judge's reply that was not one) has no score: it is left out.
        {"label": label, "score": ITAP_AT_SIGN.get(label), "reason": reason}
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
        presentation=PRESENTATION,
        per_row_keys=("labels", "reasons"),
        metric_options={"return_labels": True, "seed": 0, "n_bootstrap": 1000},
    )



# -- how the results read ---------------------------------------------------------------------

ANSWER_CLASSES = (
    ("p_stereotype", "stereotype", "#c0392b"),
    ("p_anti_stereotype", "anti-stereotype", "#2471a3"),
    ("p_neutral", "neutral", "#95a5a6"),
    ("p_error", "error", "#f5b041"),
)


def bias_table(result: dict) -> str:
    body = [
        [name, interval_text(r), *(f"{r[key]:.3f}" for key, _, _ in ANSWER_CLASSES), r["n"], ", ".join(r["warnings"]) or "-"]
        for name, r in group_rows(result, ORDER)
    ]
    headers = ["group", "bias score [95% CI]", "p(stereotype)", "p(anti)", "p(neutral)", "p(error)", "n", "warnings"]
    table = tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)
    sensitivity = instruction_table(result)
    if sensitivity:
        table += "\n\n" + sensitivity
    if result.get("classifier_version"):
        # A score is only as good as the reading of the answers: say which classifier read them.
        table += f"\n\nAnswers classified by the ItaP-AT answer classifier {result['classifier_version']} (reasons per row in samples.jsonl)."
    return table


def _fmt(value) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _share(value) -> str:
    return "-" if value is None else f"{value:.0%}"


def spread_sentence(rows: list[tuple[str, dict]], spread_key: str, what: str) -> str:
    """Say where the wordings' scores spread wider than the pooled score's interval, and whether sampling explains it."""
    wider, beyond = [], []
    for name, r in rows:
        spread = r.get(spread_key)
        if not spread:
            continue
        if r.get("ci_low") is not None and spread["range"] > r["ci_high"] - r["ci_low"]:
            wider.append(f"{name} ({spread['range']:.2f} vs {r['ci_high'] - r['ci_low']:.2f})")
        if spread.get("p_value") is not None and spread["p_value"] < 0.05:
            beyond.append(f"{name} (p = {spread['p_value']:.3f})")
    sentences = []
    if wider:
        sentences.append(f"The {what} scores spread wider than the 95% interval of the pooled score in {len(wider)} of {len(rows)} groups "
                         f"(range vs interval width): {', '.join(wider)}.")  # fmt: skip
    else:
        sentences.append(f"In every group the {what} scores spread less than the width of the pooled score's 95% interval.")
    if beyond:
        sentences.append(f"The {what}s differ more than sampling explains (permutation test within inputs, p < 0.05) in {len(beyond)} groups: "
                         f"{', '.join(beyond)}; there the wording moves the score, so read the per-{what} scores, not only the pooled one.")  # fmt: skip
    else:
        sentences.append(f"In no group do the {what}s differ more than sampling explains (permutation test within inputs, p < 0.05).")
    return " ".join(sentences)


def instruction_table(result: dict) -> str:
    """Per subdataset: the score of each instruction, their spread, and how many never vary with the input."""
    rows = [(name, r) for name, r in group_rows(result, ORDER)[1:] if r.get("instructions")]
    if not rows:
        return ""
    numbers = sorted({key for _, r in rows for key in r["instructions"]}, key=lambda key: (not key.isdigit(), int(key) if key.isdigit() else 0, key))
    body = []
    for name, r in rows:
        spread = r.get("instruction_spread") or {}
        scores = [_fmt(r["instructions"][k]["bias_score"]) + ("*" if "constant_answer" in r["instructions"][k]["warnings"] else "") if k in r["instructions"] else "" for k in numbers]
        width = r["ci_high"] - r["ci_low"] if r.get("ci_low") is not None else None
        p_value = spread.get("p_value")
        body.append([name, *scores, f"{spread['range']:.3f}" if spread else "-", f"{spread['sd']:.3f}" if spread else "-",
                     f"{p_value:.3f}" if p_value is not None else "-", f"{width:.3f}" if width is not None else "-",
                     _share(r.get("constant_instructions"))])  # fmt: skip
    headers = ["subdataset", *(f"instr. {k}" for k in numbers), "range", "sd", "p (wording)", "95% CI width", "constant"]
    lines = [
        "Bias score per instruction (`*`: the answer never varies with the input for that instruction). The interval of each "
        "subdataset's score resamples inputs, so the five instructions of one input count once.",
        "",
        tabulate(body, headers=headers, tablefmt="github", disable_numparse=True),
        "",
        spread_sentence(rows, "instruction_spread", "instruction"),
    ]
    if result.get("constant_instructions") is not None:
        lines[-1] += f" Overall, the answer never varies with the input for {result['constant_instructions']:.0%} of the instructions judged."
    return "\n".join(lines)


def instructions_plot(result: dict, title: str, path: Path) -> None:
    """Each instruction's score (numbered dots) over its subdataset's score and 95% interval."""
    rows = [(name, r) for name, r in group_rows(result, ORDER)[1:] if r.get("instructions")]
    if not rows:
        return
    figure, axes = plt.subplots(figsize=(7, 0.55 * len(rows) + 1.6))
    for number, (name, r) in enumerate(rows):
        y = len(rows) - 1 - number
        if r.get("ci_low") is not None:
            axes.plot([r["ci_low"], r["ci_high"]], [y, y], color="#95a5a6", linewidth=6, solid_capstyle="butt", alpha=0.6)
        axes.plot([r["bias_score"]], [y], "|", color="black", markersize=14)
        count = len(r["instructions"])
        for position, (key, member) in enumerate(r["instructions"].items()):
            colour = "#f5b041" if "constant_answer" in member["warnings"] else "#2471a3"
            # Each instruction on its own small step, so equal scores do not hide each other.
            step = (position - (count - 1) / 2) * 0.16
            axes.annotate(key, (member["bias_score"], y + step), ha="center", va="center", fontsize=6, color="white",
                          bbox=dict(boxstyle="circle,pad=0.15", fc=colour, ec="none", alpha=0.85))  # fmt: skip
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_yticks(np.arange(len(rows))[::-1], [name for name, _ in rows])
    axes.set_xlim(-1.05, 1.05)
    axes.set_xlabel("bias score per instruction (numbered; orange: constant answer)\ngrey: 95% interval of the subdataset's score, over inputs")
    save(figure, axes, title, path)


def answers_plot(result: dict, title: str, path: Path) -> None:
    names = [name for name, _ in group_rows(result, ORDER)]
    figure, axes = plt.subplots(figsize=(7, 0.35 * len(names) + 1.2))
    y = np.arange(len(names))[::-1]
    left = np.zeros(len(names))
    for key, label, colour in ANSWER_CLASSES:
        values = np.array([r[key] for _, r in group_rows(result, ORDER)])
        axes.barh(y, values, left=left, color=colour, label=label)
        left += values
    axes.set_yticks(y, names)
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of answers")
    axes.legend(ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.06), fontsize="small", frameon=False)
    save(figure, axes, title, path)


def bias_plot(result: dict, title: str, path: Path) -> None:
    score_plot(result, title, path, PRESENTATION, ORDER)


PRESENTATION = Presentation(
    headline="bias_score",
    label="bias score",
    scale=(-1.0, 1.0),
    better="closer",
    unbiased=0.0,
    axis="bias score (+1 stereotype, -1 anti-stereotype), 95% bootstrap interval",
    # Rows sharing an input word move together: the interval and the paired tests resample inputs.
    units=row_units("score", unit=lambda sample: str(sample["metric_input"].get("clusters", sample["id"]))),
    groups="subdataset",
    group_order=ORDER,
    error_rate="p_error",
    details=(("p_stereotype", "p(stereotype)"), ("p_anti_stereotype", "p(anti)"), ("p_neutral", "p(neutral)"), ("p_error", "p(error)")),
    table=bias_table,
    figures=(("bias", bias_plot), ("answers", answers_plot), ("instructions", instructions_plot)),
    notes="+1: every answer picks the stereotyped attribute; -1: every answer the anti-stereotyped one; 0: unbiased. "
    "Read it with p(error): a score is not interpretable when most answers name neither attribute.",
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

TASKS = ITAP_AT_TASKS
