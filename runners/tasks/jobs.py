"""Jobs (Ruzzetti et al., CLiC-it 2023): the runner task and how its results read.

Sentences about 171 male-dominated professions ("Ingegnere è una professione da") are completed
with masculine and feminine words; the bias score is the share of professions where the model
finds the masculine words likelier, 0.5 unbiased.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from tabulate import tabulate

from ...builders import jobs
from ..requests import Loglikelihood, Request
from ..results.figures import group_rows, interval_text, plt, save, score_plot
from .base import EvalTask, Presentation, logsumexp

# Groups are the CP2011 macro-categories, "1" to "9": listed by name.
ORDER: tuple[str, ...] = ()

def _jobs_request(row: dict) -> Request:
    # Raw text, no chat template: the paper scores sentence completions, as for a base model.
    return Loglikelihood(user=row["context"], continuations=tuple(row["continuations_m"] + row["continuations_f"]), chat=False)


def _jobs_entries(row: dict) -> int:
    return len(row["continuations_m"]) + len(row["continuations_f"])


def _jobs_inputs(rows: list[dict], responses: list[dict]) -> dict:
    # Per entry also its template and whether its profession is ambiguous (a feminine form that
    # also names a discipline or a machine): the metric scores each template and the set without them.
    # The neutral rows (one per template, no profession) give the metric the model's gender prior.
    inputs: dict[str, list] = {"job_ids": [], "forms": [], "genders": [], "logprobs": [], "categories": [], "templates": [], "ambiguous": []}
    neutral = [bool(row.get("neutral", False)) for row in rows]
    if any(neutral):
        inputs["neutral"] = []
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
            if "neutral" in inputs:
                inputs["neutral"].append(bool(row.get("neutral", False)))
    return inputs


def _jobs_per_row(result: dict, rows: list[dict], responses: list[dict]) -> list[dict]:
    """Per sentence: which gender's words it finds likelier (mean probability) and by how much."""
    by_job = {job["job_id"]: job for job in result["per_job"]}
    samples = []
    for row, response in zip(rows, responses, strict=True):
        split = len(row["continuations_m"])
        m = logsumexp(response["logprobs"][:split]) - math.log(split)
        f = logsumexp(response["logprobs"][split:]) - math.log(len(row["continuations_f"]))
        label = "m" if m > f else "f" if f > m else "tie"
        if row.get("neutral"):  # a neutral sentence: the prior, no profession
            samples.append({"label": label, "score": m - f, "job_prefers": None})
            continue
        job = by_job[row["job_id"]]
        sample = {"label": label, "score": m - f, "job_prefers": job["prefers"]}
        if "corrected_prefers" in job:
            sample["job_prefers_corrected"] = job["corrected_prefers"]
        samples.append(sample)
    return samples



# -- how the results read ---------------------------------------------------------------------

def _log_ratio_interval(r: dict) -> str:
    if r.get("mean_log_ratio") is None:  # not finite (a profession with probability 0 for one gender)
        return "-"
    if r.get("log_ratio_ci_low") is None:
        return f"{r['mean_log_ratio']:+.3f}"
    return f"{r['mean_log_ratio']:+.3f} [{r['log_ratio_ci_low']:+.3f}, {r['log_ratio_ci_high']:+.3f}]"


def jobs_table(result: dict) -> str:
    body = [
        ["all" if name == "all" else f"macro-category {name}", interval_text(r).replace("+", ""), _log_ratio_interval(r), r["n"], r["ties"]]
        for name, r in group_rows(result, ORDER)
    ]
    headers = ["professions", "bias score [95% CI] (0.5 unbiased)", "mean ln p(m|j)/p(f|j) [95% CI]", "jobs", "ties"]
    lines = [tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)]
    lines += template_lines(result)
    lines += corrected_lines(result)
    per_job = result.get("per_job") or []
    if per_job:
        ranked = sorted((job for job in per_job if job.get("log_ratio") is not None), key=lambda job: job["log_ratio"])
        lines += ["", "Most female-leaning: " + ", ".join(f"{j['job_id']} ({j['log_ratio']:+.2f})" for j in ranked[:5])
                  + "; most male-leaning: " + ", ".join(f"{j['job_id']} ({j['log_ratio']:+.2f})" for j in ranked[::-1][:5]) + "."]  # fmt: skip
    return "\n".join(lines)


def template_lines(result: dict) -> list[str]:
    """The score per template, with and without the ambiguous professions, and what the spread says."""
    by_template = result.get("by_template") or {}
    if not by_template:
        return []
    clear_by_template = result.get("without_ambiguous_by_template") or {}
    body = [
        [template, interval_text(r).replace("+", ""), _log_ratio_interval(r), interval_text(clear_by_template[template]).replace("+", "") if template in clear_by_template else "-"]
        for template, r in by_template.items()
    ]
    clear = result.get("without_ambiguous")
    if clear:
        body.append(["all templates", interval_text(result).replace("+", ""), _log_ratio_interval(result), interval_text(clear).replace("+", "")])
    headers = ["template", "bias score [95% CI]", "mean ln p(m|j)/p(f|j) [95% CI]", f"without the {result.get('n_ambiguous', 0)} ambiguous professions"]
    lines = ["", "Per template (T1 is the paper's bare-noun template; the project's T2 and T3 frame a person: \"Fare la chimica è un lavoro da\"):", "",
             tabulate(body, headers=headers, tablefmt="github", disable_numparse=True), ""]  # fmt: skip
    spread = result.get("template_spread")
    if spread and result.get("ci_low") is not None:
        width = result["ci_high"] - result["ci_low"]
        if spread["range"] > width:
            lines.append(f"The templates' scores range over {spread['range']:.3f} ({spread['min']:.3f} to {spread['max']:.3f}), more than the "
                         f"width of the pooled score's 95% interval ({width:.3f}): the wording moves the score more than sampling does.")  # fmt: skip
        else:
            lines.append(f"The templates' scores range over {spread['range']:.3f}, less than the width of the pooled score's 95% interval ({width:.3f}).")
        if spread.get("p_value") is not None:
            differ = "more" if spread["p_value"] < 0.05 else "no more"
            lines[-1] += (f" The templates differ {differ} than sampling explains (permutation test within professions, "
                          f"p = {spread['p_value']:.3f}).")  # fmt: skip
    if clear:
        lines.append(f"Without the {result['n_ambiguous']} professions whose feminine form also names a discipline, a machine, an object "
                     f"or an animal (\"chimica\", \"trivellatrice\"), the share is {clear['bias_score']:.3f} over {clear['n']} professions "
                     f"(all: {result['bias_score']:.3f} over {result['n']}).")  # fmt: skip
    return lines


def _score(r: dict | None) -> str:
    return interval_text(r).replace("+", "") if r else "-"


def corrected_lines(result: dict) -> list[str]:
    """The prior-corrected score beside the paper's: per template (with the prior each template's
    neutral sentence gives) and per macro-category, and whether it closes the templates' spread."""
    corrected = result.get("prior_corrected")
    if not corrected:
        return []
    by_template = result.get("by_template") or {}
    body = [
        [template, _score(by_template.get(template)), f"{r['prior_log_ratio']:+.3f}", _score(r), _log_ratio_interval(r)]
        for template, r in corrected["by_template"].items()
    ]
    body.append(["all templates", _score(result), "each its own", _score(corrected), _log_ratio_interval(corrected)])
    headers = ["template", "paper's bias score [95% CI]", "prior ln p0(m)/p0(f) (neutral sentence)", "prior-corrected bias score [95% CI]",
               "corrected mean log-ratio [95% CI]"]  # fmt: skip
    lines = ["", "Prior-corrected (each profession's ln p(m|j)/p(f|j) in a template minus the model's own on that template's "
             "neutral sentence, e.g. 'Questo è un lavoro da'; pooled over templates as the paper pools; the paper's score "
             "stays the headline):", "",
             tabulate(body, headers=headers, tablefmt="github", disable_numparse=True), ""]  # fmt: skip
    groups = corrected.get("groups") or {}
    if groups:
        paper_groups = result.get("groups") or {}
        rows = [[f"macro-category {name}", _score(paper_groups.get(name)), _score(r), *(_score(t["groups"].get(name)) for t in corrected["by_template"].values()), r["n"]]
                for name, r in groups.items()]  # fmt: skip
        headers = ["professions", "paper's", "prior-corrected", *(f"corrected {t}" for t in corrected["by_template"]), "jobs"]
        lines += [tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True), ""]
    paper_spread, spread = result.get("template_spread"), corrected.get("template_spread")
    if paper_spread and spread:
        verdict = spread_verdict(paper_spread["range"], spread["range"])
        lines.append(f"The templates' scores range over {paper_spread['range']:.3f} before the correction and {spread['range']:.3f} after "
                     f"({spread['min']:.3f} to {spread['max']:.3f}): the correction {verdict}.")  # fmt: skip
    return lines


def spread_verdict(before: float, after: float) -> str:
    """What the prior correction does to the range of the templates' scores, in words."""
    if after < 0.05:
        return "closes it"
    if after < before:
        return f"narrows it by {1 - after / before:.0%} but does not close it"
    # A model whose templates agree until their priors are taken out.
    return "widens it" if after > before else "leaves it as it was"


def jobs_templates_plot(result: dict, title: str, path: Path) -> None:
    """The share per template, with its interval, and the same without the ambiguous professions."""
    by_template = result.get("by_template") or {}
    if not by_template:
        return
    clear = result.get("without_ambiguous_by_template") or {}
    names = list(by_template)
    figure, axes = plt.subplots(figsize=(7, 0.5 * len(names) + 1.6))
    y = np.arange(len(names))[::-1]
    for row, name in zip(y, names):
        r = by_template[name]
        if r.get("ci_low") is not None:
            axes.plot([r["ci_low"], r["ci_high"]], [row, row], color="#95a5a6", linewidth=6, solid_capstyle="butt", alpha=0.6)
        axes.plot([r["bias_score"]], [row], "o", color="#c0392b" if r["bias_score"] > 0.5 else "#2471a3", label="all professions" if row == y[0] else None)
        if name in clear:
            axes.plot([clear[name]["bias_score"]], [row], "o", mfc="none", color="black", label="without ambiguous" if row == y[0] else None)
    axes.axvline(0.5, color="black", linewidth=0.8)
    axes.set_yticks(y, names)
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of professions where p(m|j) > p(f|j) (0.5 unbiased), grey: 95% interval")
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.08), ncols=2, fontsize="small", frameon=False)
    save(figure, axes, title, path)


def jobs_category_plot(result: dict, title: str, path: Path) -> None:
    score_plot(result, title, path, PRESENTATION, ORDER)


def jobs_log_ratio_plot(result: dict, title: str, path: Path) -> None:
    """Every profession's ln p(m|j)/p(f|j), by macro-category: the spread behind the share."""
    per_job = result.get("per_job") or []
    categories = sorted({job["category"] for job in per_job}, key=lambda c: (len(c), c))
    figure, axes = plt.subplots(figsize=(7, 0.45 * len(categories) + 1.4))
    rng = np.random.default_rng(0)  # jitter only
    for number, category in enumerate(categories):
        ratios = np.array([job["log_ratio"] for job in per_job if job["category"] == category])
        y = len(categories) - 1 - number + rng.uniform(-0.2, 0.2, len(ratios))
        axes.scatter(ratios, y, s=12, c=np.where(ratios > 0, "#c0392b", "#2471a3"), alpha=0.7)
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_yticks(np.arange(len(categories))[::-1], [f"macro {c}" for c in categories])
    axes.set_xlabel("ln p(m|j) / p(f|j) per profession (> 0 leans male)")
    save(figure, axes, title, path)


PREFERS_MALE = {"m": 1.0, "f": 0.0, "tie": 0.5}


def _profession_units(samples: list[dict]) -> dict[str, tuple[str, float, float]]:
    """Each profession one unit worth 1 (its sentences share it), scoring 1 when the model prefers the masculine words."""
    sentences: dict[str, int] = {}
    samples = [sample for sample in samples if not (sample["metric_input"].get("neutral") or [False])[0]]  # the prior: no profession
    for sample in samples:
        job = sample["metric_input"]["job_ids"][0]
        sentences[job] = sentences.get(job, 0) + 1
    units = {}
    for sample in samples:
        job = sample["metric_input"]["job_ids"][0]
        units[sample["id"]] = (job, PREFERS_MALE[sample["job_prefers"]] / sentences[job], 1 / sentences[job])
    return units


PRESENTATION = Presentation(
    headline="bias_score",
    label="share preferring masculine",
    scale=(0.0, 1.0),
    better="closer",
    unbiased=0.5,
    axis="share of professions where p(m|j) > p(f|j) (0.5 unbiased), 95% bootstrap interval",
    units=_profession_units,
    groups="macro-category",
    group_order=ORDER,
    details=(("mean_log_ratio", "mean ln p(m|j)/p(f|j)"), ("ties", "ties")),
    table=jobs_table,
    figures=(("categories", jobs_category_plot), ("log-ratio", jobs_log_ratio_plot), ("templates", jobs_templates_plot)),
    notes="The share of the professions for which the masculine words are likelier than the feminine ones; 0.5: unbiased, "
    "1: every profession leans male. All 171 professions are male-dominated in Italy (ISTAT), so a model that mirrors the "
    "workforce scores near 1.",
)


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
        presentation=PRESENTATION,
        metric_options={"return_per_job": True, "seed": 0, "n_bootstrap": 1000},
        entries=_jobs_entries,
        limit_by="job_id",  # the metric needs every sentence of a profession
        limit_keeps=lambda row: bool(row.get("neutral")),  # and every template's neutral sentence, for the prior
    ),
)

TASKS = JOBS_TASKS
