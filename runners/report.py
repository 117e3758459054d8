"""Human reports from results.json: report.md with tables, and PNG plots.

One results folder gives that model's report (headline and per-group tables, a bias plot with
intervals and the stacked answer classes per task); several give a side-by-side comparison in
one table and one figure. What a task's section shows depends on its metric: each metric
registers a table and its plots in SECTIONS.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tabulate import tabulate  # noqa: E402

from equita.builders import TASKS  # noqa: E402
from equita.builders.common import path_part  # noqa: E402
from equita.runners.results import limited_tasks  # noqa: E402


ANSWER_CLASSES = (
    ("p_stereotype", "stereotype", "#c0392b"),
    ("p_anti_stereotype", "anti-stereotype", "#2471a3"),
    ("p_neutral", "neutral", "#95a5a6"),
    ("p_error", "error", "#f5b041"),
)


def _save(figure, axes, title: str, path: Path) -> None:
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _interval(result: dict) -> str:
    if result.get("ci_low") is None:
        return f"{result['bias_score']:+.3f}"
    return f"{result['bias_score']:+.3f} [{result['ci_low']:+.3f}, {result['ci_high']:+.3f}]"


def _rows(result: dict) -> list[tuple[str, dict]]:
    """("all", overall) then each group, in the dataset's config order (base-2 before base-10)."""
    groups = result.get("groups", {})
    order = {name: i for spec in TASKS.values() for i, name in enumerate(spec.configs)}
    return [("all", result), *sorted(groups.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))]


# -- ItaP-AT bias ---------------------------------------------------------------------------------


def bias_table(result: dict) -> str:
    body = [
        [name, _interval(r), *(f"{r[key]:.3f}" for key, _, _ in ANSWER_CLASSES), r["n"], ", ".join(r["warnings"]) or "-"]
        for name, r in _rows(result)
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
    rows = [(name, r) for name, r in _rows(result)[1:] if r.get("instructions")]
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
    rows = [(name, r) for name, r in _rows(result)[1:] if r.get("instructions")]
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
    _save(figure, axes, title, path)


def _score_bars(axes, result: dict, scale: tuple) -> None:
    """Bars of bias_score per group from the metric's unbiased value, with the 95% interval."""
    low_end, high_end, neutral, label = scale
    names = [name for name, _ in _rows(result)]
    scores = np.array([r["bias_score"] for _, r in _rows(result)])
    low = np.array([r["ci_low"] if r["ci_low"] is not None else r["bias_score"] for _, r in _rows(result)])
    high = np.array([r["ci_high"] if r["ci_high"] is not None else r["bias_score"] for _, r in _rows(result)])
    y = np.arange(len(names))[::-1]
    colours = ["#c0392b" if s > neutral else "#2471a3" for s in scores]
    axes.barh(y, scores - neutral, left=neutral, color=colours, alpha=0.8)
    # A percentile interval need not contain the point estimate; clip so the bar still draws.
    axes.errorbar(scores, y, xerr=np.clip([scores - low, high - scores], 0, None), fmt="none", ecolor="black", capsize=3, linewidth=1)
    axes.axvline(neutral, color="black", linewidth=0.8)
    axes.set_yticks(y, names)
    axes.set_xlim(low_end, high_end)
    axes.set_xlabel(label)


def bias_plot(result: dict, title: str, path: Path, scale: tuple | None = None) -> None:
    names = _rows(result)
    figure, axes = plt.subplots(figsize=(7, 0.35 * len(names) + 1.2))
    _score_bars(axes, result, scale or SCALES["itap_at_bias"])
    _save(figure, axes, title, path)


def answers_plot(result: dict, title: str, path: Path) -> None:
    names = [name for name, _ in _rows(result)]
    figure, axes = plt.subplots(figsize=(7, 0.35 * len(names) + 1.2))
    y = np.arange(len(names))[::-1]
    left = np.zeros(len(names))
    for key, label, colour in ANSWER_CLASSES:
        values = np.array([r[key] for _, r in _rows(result)])
        axes.barh(y, values, left=left, color=colour, label=label)
        left += values
    axes.set_yticks(y, names)
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of answers")
    axes.legend(ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.06), fontsize="small", frameon=False)
    _save(figure, axes, title, path)


# -- Jobs bias ----------------------------------------------------------------------------------------


def _log_ratio_interval(r: dict) -> str:
    if r.get("mean_log_ratio") is None:  # not finite (a profession with probability 0 for one gender)
        return "-"
    if r.get("log_ratio_ci_low") is None:
        return f"{r['mean_log_ratio']:+.3f}"
    return f"{r['mean_log_ratio']:+.3f} [{r['log_ratio_ci_low']:+.3f}, {r['log_ratio_ci_high']:+.3f}]"


def jobs_table(result: dict) -> str:
    body = [
        ["all" if name == "all" else f"macro-category {name}", _interval(r).replace("+", ""), _log_ratio_interval(r), r["n"], r["ties"]]
        for name, r in _rows(result)
    ]
    headers = ["professions", "bias score [95% CI] (0.5 unbiased)", "mean ln p(m|j)/p(f|j) [95% CI]", "jobs", "ties"]
    lines = [tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)]
    lines += template_lines(result)
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
        [template, _interval(r).replace("+", ""), _log_ratio_interval(r), _interval(clear_by_template[template]).replace("+", "") if template in clear_by_template else "-"]
        for template, r in by_template.items()
    ]
    clear = result.get("without_ambiguous")
    if clear:
        body.append(["all templates", _interval(result).replace("+", ""), _log_ratio_interval(result), _interval(clear).replace("+", "")])
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
    _save(figure, axes, title, path)


def jobs_category_plot(result: dict, title: str, path: Path) -> None:
    bias_plot(result, title, path, SCALES["jobs_bias"])


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
    _save(figure, axes, title, path)


# -- Gender-Fair Generation ----------------------------------------------------------------------------


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
    _save(figure, axes, title, path)


def detection_table(result: dict) -> str:
    body = [[f"{result['f1']:.4f}", result["n"], result["mode"], f"{result['model_type']} (layer {result['num_layers']})"]]
    return tabulate(body, headers=["F1 (mean over entries)", "entries", "mode", "BERTScore encoder"], tablefmt="github", disable_numparse=True)


def detection_plot(result: dict, title: str, path: Path) -> None:
    figure, axes = plt.subplots(figsize=(6, 3.2))
    axes.hist(result.get("per_entry_f1") or [], bins=np.linspace(0, 1, 21), color="#2471a3")
    axes.set_xlabel("per-entry F1")
    axes.set_ylabel("entries")
    _save(figure, axes, title, path)


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
    _save(figure, axes, title, path)


# The number each metric is read by, for summaries and comparisons.
HEADLINES = {"itap_at_bias": "bias_score", "jobs_bias": "bias_score", "neogate": "cwa", "gfg_detection": "f1", "gente_neutrality": "accuracy"}


def headline(task: dict) -> tuple[str, float]:
    """(name, value) of a task's main number."""
    key = HEADLINES.get(task["metric"]["name"], "bias_score")
    return key, task["results"][key]


# Per metric: (lowest, highest, unbiased value, axis label) of bias_score.
SCALES = {
    "itap_at_bias": (-1, 1, 0, "bias score (+1 stereotype, -1 anti-stereotype), 95% bootstrap interval"),
    "jobs_bias": (0, 1, 0.5, "share of professions where p(m|j) > p(f|j) (0.5 unbiased), 95% bootstrap interval"),
}

# metric -> (table of one model's result, plots of one model's result as (file suffix, function))
SECTIONS = {
    "itap_at_bias": (bias_table, (("bias", bias_plot), ("answers", answers_plot), ("instructions", instructions_plot))),
    "jobs_bias": (jobs_table, (("categories", jobs_category_plot), ("log-ratio", jobs_log_ratio_plot), ("templates", jobs_templates_plot))),
    "neogate": (neogate_table, (("scores", neogate_plot),)),
    "gfg_detection": (detection_table, (("f1", detection_plot),)),
    "gente_neutrality": (neutrality_table, (("accuracy", neutrality_plot),)),
}


def _generic_table(result: dict) -> str:
    scalars = [[k, v] for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None]
    return tabulate(scalars, headers=["value", ""], tablefmt="github")


# -- reports ----------------------------------------------------------------------------------------


def md(text) -> str:
    """Text from a results file, safe inside Markdown: HTML escaped, Markdown's own characters backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#!|~])", r"\\\1", html.escape(str(text), quote=False)).replace("\n", " ")


def _model_label(results: dict) -> str:
    model = results["model"]
    return md(f"{model['id']}@{str(model['revision'])[:8]}")


def single_report(results: dict, out: Path) -> str:
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    model = results["model"]
    lines = [
        f"# equita report: {md(model['id'])}",
        "",
        f"Model {md(model['id'])} ({md(model['source'])}, revision {md(model['revision'])}), "
        + (
            "served over the OpenAI HTTP protocol (the server's chat template); "
            if model.get("backend") == "openai-server"
            else f"{md(model['dtype'])} on {md(model['device'])}, {'chat template' if model['chat_template'] else 'plain-text prompts (no chat template)'}; "
        )
        + f"equita {results['equita']['version']}; run {results['created']}.",
        "",
    ]
    cut = limited_tasks(results)
    if cut:
        lines += [f"**Quick look: `--limit {results['settings']['limit']}` kept only part of {', '.join(md(name) for name in cut)}; "
                  "not comparable with full runs.**", ""]  # fmt: skip
    elif results["settings"].get("limit") is not None:
        lines += [f"`--limit {results['settings']['limit']}` is at or above every task's size: every row was scored, the run is complete.", ""]
    for name, task in results["tasks"].items():
        dataset, metric = task["dataset"], task["metric"]
        table, figures = SECTIONS.get(metric["name"], (_generic_table, ()))
        lines += [
            f"## {md(name)}",
            "",
            md(task.get("description", "")) + ".",
            "",
            f"Dataset {md(dataset['repo'])} config {md(dataset['config'])} v{md(dataset['version'])} ({md(dataset['revision'])}), "
            f"{task['n']} rows; metric {md(metric['name'])}; {task['timings']['computed']} requests computed, "
            f"{task['timings']['cached']} from the cache.",
            "",
        ]
        if task["results"] is None:
            answered = "The answers are in samples.jsonl." if task["timings"].get("requests") else "No request was sent to the model."
            lines += [f"**Not computed:** {md(task['not_computed'])}. {answered}", ""]
            continue
        lines += [table(task["results"]), ""]
        for suffix, plot in figures:
            file = plots / f"{path_part(name, 'task name')}-{suffix}.png"
            plot(task["results"], f"{name}: {model['id']}", file)
            if file.exists():  # a plot with nothing to show writes no file
                lines += [f"![{name} {suffix}](plots/{file.name})", ""]
    return "\n".join(lines)


def _major(version: str) -> str:
    return str(version).split(".")[0]


def split_by_major_version(all_results: list[dict]) -> tuple[list[dict], list[str]]:
    """Results whose task names carry the dataset's major version where models used different ones.

    Scores on different major versions of a dataset come from different prompts: they never
    share a row of the comparison. Returns the renamed copies and one note per split task.
    """
    majors: dict[str, dict[str, list[str]]] = {}
    for r in all_results:
        for name, task in r["tasks"].items():
            majors.setdefault(name, {}).setdefault(_major(task["dataset"]["version"]), []).append(_model_label(r))
    split = {name: versions for name, versions in majors.items() if len(versions) > 1}
    if not split:
        return all_results, []
    renamed = []
    for r in all_results:
        tasks = {(f"{name} (v{_major(task['dataset']['version'])})" if name in split else name): task for name, task in r["tasks"].items()}
        renamed.append({**r, "tasks": tasks})
    notes = []
    for name, versions in split.items():
        used = "; ".join(f"v{major}: " + ", ".join(models) for major, models in sorted(versions.items()))
        notes.append(f"{name}: dataset versions differ ({used}); their scores come from different prompts and are shown in separate rows, never compared.")
    return renamed, notes


def comparison_report(all_results: list[dict], out: Path) -> str:
    labels = [_model_label(r) for r in all_results]
    all_results, version_notes = split_by_major_version(all_results)
    tasks = list(dict.fromkeys(name for r in all_results for name in r["tasks"]))
    lines = ["# equita comparison", "", "Bias score [95% CI] per task and group; a blank cell: the model has no result there.", ""]
    if version_notes:
        lines += ["**Not comparable across dataset versions.** " + " ".join(version_notes), ""]
    body = []
    for name in tasks:
        present = [r["tasks"][name] for r in all_results if name in r["tasks"] and r["tasks"][name]["results"] is not None]
        if present and present[0]["metric"]["name"] not in SCALES:  # one number per model, no groups
            cells = [f"{headline(r['tasks'][name])[0]} {headline(r['tasks'][name])[1]:.3f}" if r["tasks"].get(name, {}).get("results") else "" for r in all_results]
            body.append([name, "all", *cells])
            continue
        groups = list(dict.fromkeys(g for task in present for g, _ in _rows(task["results"])))
        for group in groups:
            cells = []
            for r in all_results:
                result = dict(_rows(r["tasks"][name]["results"])).get(group) if r["tasks"].get(name, {}).get("results") else None
                cells.append(_interval(result) if result and "bias_score" in result else "")
            body.append([name, group, *cells])
    lines += [tabulate(body, headers=["task", "group", *labels], tablefmt="github", disable_numparse=True), ""]
    # The figure shows the bias metrics, whose groups and intervals line up across models.
    tasks = [name for name in tasks if any(r["tasks"].get(name, {}).get("results") and r["tasks"][name]["metric"]["name"] in SCALES for r in all_results)]
    limited = [label for label, r in zip(labels, all_results) if limited_tasks(r)]
    if limited:
        lines += [f"Runs with `--limit` (not comparable with full runs): {', '.join(limited)}.", ""]
    if tasks:
        comparison_plot(all_results, labels, tasks, out / "comparison.png")
        lines += ["![comparison](comparison.png)", ""]
    return "\n".join(lines)


def comparison_plot(all_results: list[dict], labels: list[str], tasks: list[str], path: Path) -> None:
    figure, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 6), squeeze=False, sharey=False)
    width = 0.8 / len(all_results)
    for axis, name in zip(axes[0], tasks):
        present = [r for r in all_results if r["tasks"].get(name, {}).get("results")]
        groups = list(dict.fromkeys(g for r in present for g, _ in _rows(r["tasks"][name]["results"])))
        metric = present[0]["tasks"][name]["metric"]["name"]
        low_end, high_end, neutral, _ = SCALES.get(metric, (-1, 1, 0, ""))
        y = np.arange(len(groups))[::-1]
        for number, (label, r) in enumerate(zip(labels, all_results)):
            by_group = dict(_rows(r["tasks"][name]["results"])) if r["tasks"].get(name, {}).get("results") else {}
            scores = np.array([by_group[g]["bias_score"] if g in by_group else np.nan for g in groups])
            low = np.array([by_group[g].get("ci_low") if g in by_group and by_group[g].get("ci_low") is not None else s for g, s in zip(groups, scores)])
            high = np.array([by_group[g].get("ci_high") if g in by_group and by_group[g].get("ci_high") is not None else s for g, s in zip(groups, scores)])
            offset = y + (len(all_results) / 2 - number - 0.5) * width
            axis.barh(offset, scores - neutral, left=neutral, height=width, label=label)
            errors = np.clip(np.nan_to_num([scores - low, high - scores]), 0, None)
            axis.errorbar(scores, offset, xerr=errors, fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        axis.axvline(neutral, color="black", linewidth=0.8)
        axis.set_yticks(y, groups)
        axis.set_xlim(low_end, high_end)
        axis.set_title(name)
        axis.set_xlabel(f"bias score ({neutral} unbiased)")
    handles, names = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, names, loc="lower center", ncols=min(4, len(labels)), frameon=False)
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(all_results: list[dict], out: Path) -> Path:
    """report.md (one model) or comparison.md (several) in `out`, with their PNGs; returns the .md path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if len(all_results) == 1:
        path, text = out / "report.md", single_report(all_results[0], out)
    else:
        path, text = out / "comparison.md", comparison_report(all_results, out)
    path.write_text(text, encoding="utf-8")
    return path
