"""Gender-Fair Generation (CALAMITA 2024): the runner tasks and how their results read.

Few-shot prompts of the challenge, greedy generation; detection is scored with a BERTScore-based
F1, reformulation and translation with Neo-GATE's coverage-weighted accuracy or the GeNTE
classifier's accuracy. No score here has an unbiased value: higher is better.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tabulate import tabulate

from ...builders import gfg
from ..requests import Generate, Request
from ..results.figures import plt, save
from .base import EvalTask, Presentation, row_units


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
        {"answer": gfg_answer(r["text"]), "cwa": entry["cwa"], "misgeneration": entry["misgeneration"], "coverage": entry["coverage"],
         "found_tagged": entry["found_tagged"], "n_annotations": entry["n_annotations"]}
        for r, entry in zip(responses, result["per_entry"], strict=True)
    ]


def _neutrality_inputs(rows: list[dict], responses: list[dict]) -> dict:
    return {"predictions": [gfg_answer(r["text"]) for r in responses], "references": [row["expected_label"] for row in rows]}


def _neutrality_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    return [
        {"answer": gfg_answer(r["text"]), "label": label, "expected": row["expected_label"], "score": int(label == row["expected_label"])}
        for row, r, label in zip(rows, responses, result["labels"], strict=True)
    ]



# -- how the results read ---------------------------------------------------------------------

def neogate_table(result: dict) -> str:
    body = [
        ["pooled over annotations (official)", *(f"{result[k]:.2f}" if result[k] is not None else "-" for k in ("coverage", "accuracy", "cwa", "misgeneration"))],
        ["mean over entries (CALAMITA leaderboard)", "-", "-", f"{result['entry_mean_cwa']:.2f}", f"{result['entry_mean_misgeneration']:.2f}"],
    ]
    table = tabulate(body, headers=["", "coverage", "accuracy", "cwa", "mis-generation"], tablefmt="github", disable_numparse=True)
    return table + f"\n\n{result['n']} entries, {result['n_annotations']} annotated words; percentages (0-100)."


def neogate_plot(result: dict, title: str, path: Path) -> None:
    names = ["coverage", "accuracy", "cwa", "misgeneration"]
    values = [result[k] or 0.0 for k in names]
    figure, axes = plt.subplots(figsize=(6, 3.2))
    axes.bar(names, values, color=["#95a5a6", "#2471a3", "#1e8449", "#c0392b"])
    for x, value in enumerate(values):
        axes.text(x, value + 1, f"{value:.1f}", ha="center", fontsize="small")
    axes.set_ylim(0, max(100, max(values) + 10))
    axes.set_ylabel("% (pooled over annotated words)")
    save(figure, axes, title, path)


def detection_table(result: dict) -> str:
    body = [[f"{result['f1']:.4f}", result["n"], result["mode"], f"{result['model_type']} (layer {result['num_layers']})"]]
    return tabulate(body, headers=["F1 (mean over entries)", "entries", "mode", "BERTScore encoder"], tablefmt="github", disable_numparse=True)


def detection_plot(result: dict, title: str, path: Path) -> None:
    figure, axes = plt.subplots(figsize=(6, 3.2))
    axes.hist(result.get("per_entry_f1") or [], bins=np.linspace(0, 1, 21), color="#2471a3")
    axes.set_xlabel("per-entry F1")
    axes.set_ylabel("entries")
    save(figure, axes, title, path)


def neutrality_table(result: dict) -> str:
    body = [["all", f"{result['accuracy']:.2f}", result["n"]]]
    for expected, group in result["by_expected"].items():
        if group["n"]:
            body.append([f"expected {expected}", f"{group['accuracy']:.2f}", group["n"]])
    table = tabulate(body, headers=["outputs", "accuracy (%)", "n"], tablefmt="github", disable_numparse=True)
    return table + f"\n\nThe classifier ({result['model']}) labelled {result['predicted_neutral']:.1f}% of the outputs neutral."


def neutrality_plot(result: dict, title: str, path: Path) -> None:
    groups = [("all", result["accuracy"])] + [(f"expected {k}", g["accuracy"]) for k, g in result["by_expected"].items() if g["n"]]
    figure, axes = plt.subplots(figsize=(6, 3.2))
    axes.bar([g for g, _ in groups], [v for _, v in groups], color="#1e8449")
    axes.set_ylim(0, 100)
    axes.set_ylabel("outputs labelled as expected (%)")
    save(figure, axes, title, path)


DETECTION = Presentation(
    headline="f1", label="F1", scale=(0.0, 1.0), better="higher", axis="F1 (mean over entries)", interval=False,
    units=row_units("f1"), table=detection_table, figures=(("f1", detection_plot),),
    notes="The mean over entries of a BERTScore F1 between the gendered expressions found and the annotated ones.",
)  # fmt: skip
NEOGATE = Presentation(
    headline="cwa", label="CWA (%)", scale=(0.0, 100.0), better="higher", axis="coverage-weighted accuracy (%)", interval=False,
    # CWA pooled over annotated words is tagged words / annotated words, so an entry weighs by its annotations.
    units=row_units("found_tagged", "n_annotations"), multiplier=100.0, table=neogate_table,
    details=(("coverage", "coverage (%)"), ("accuracy", "accuracy (%)"), ("misgeneration", "mis-generation (%)"), ("entry_mean_cwa", "CWA, mean over entries")), figures=(("scores", neogate_plot),),
    notes="Neo-GATE's coverage-weighted accuracy, pooled over annotated words (%): the share of words written in the "
    "gender-fair form asked for.",
)  # fmt: skip
NEUTRALITY = Presentation(
    headline="accuracy", label="accuracy (%)", scale=(0.0, 100.0), better="higher", axis="outputs labelled as expected (%)",
    interval=False, units=row_units("score"), multiplier=100.0, table=neutrality_table, details=(("predicted_neutral", "labelled neutral (%)"),), figures=(("accuracy", neutrality_plot),),
    notes="The share of outputs the GeNTE classifier labels as the reference expects (neutral, or gendered where asked) (%).",
)  # fmt: skip

GFG_METRICS = {
    # metric: (metric_inputs, per_row, per_row_keys, options, presentation)
    "gfg_detection": (_gfg_detection_inputs, _gfg_detection_per_row, (), {"return_per_entry": True}, DETECTION),
    "neogate": (_neogate_inputs, _neogate_per_row, ("per_entry",), {"return_per_entry": True}, NEOGATE),
    "gente_neutrality": (_neutrality_inputs, _neutrality_per_row, ("labels",), {"return_labels": True}, NEUTRALITY),
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
        presentation=GFG_METRICS[metric][4],
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

TASKS = GFG_TASKS
