"""Human reports from results.json: report.md with tables, and PNG plots.

One results folder gives that model's report; several give a comparison: per task the ranking
(with the paired tests, when the folders hold their samples), the scores per group side by side,
and one figure. What a task's section shows is its benchmark's `Presentation`
(runners/tasks/<benchmark>.py): its table, its figures, what is unbiased and what ranks models.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from urllib.parse import quote

import numpy as np
from tabulate import tabulate

from ...builders.common import path_part
from .figures import group_rows, interval_text, plt
from .ranking import Entry, TaskRanking, rank_task, task_names
from .contract import limited_tasks
from ..tasks import presentation


def _generic_table(result: dict) -> str:
    """A task this equita has no declaration for: its scalar values as they are."""
    scalars = [[k, v] for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None]
    return tabulate(scalars, headers=["value", ""], tablefmt="github")


def md(text) -> str:
    """Text from a results file, safe inside Markdown: HTML escaped, Markdown's own characters backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#!|~])", r"\\\1", html.escape(str(text), quote=False)).replace("\n", " ")


# Parts of a metric's results whose keys are names from the results file (groups, instructions, templates).
NAMED = ("groups", "instructions", "by_template", "without_ambiguous_by_template")
# A plain word or code ("constant_answer", "base-1", "3.0.0"): nothing in it means anything to Markdown or HTML.
PLAIN = re.compile(r"[A-Za-z0-9_.:+-]*")


def _for_markdown(value, names: bool = False):
    """A metric's results with every text from the file (warnings, group names, ...) made safe for
    Markdown as md() does, for the benchmarks' tables; plain codes the tables compare stay as they are."""
    if isinstance(value, str):
        return value if PLAIN.fullmatch(value) else md(value)
    if isinstance(value, list):
        return [_for_markdown(item) for item in value]
    if isinstance(value, dict):
        return {(_for_markdown(key) if names else key): _for_markdown(item, names=not names and key in NAMED) for key, item in value.items()}
    return value


def plain(text) -> str:
    """Text from a results file as matplotlib text: a "$" is a dollar sign, never the start of math it may fail to parse."""
    return str(text).replace("$", r"\$")


def _for_plot(value, names: bool = False):
    """A metric's results with the names from the file (group names become tick labels) as plain()."""
    if isinstance(value, dict):
        return {(plain(key) if names else key): _for_plot(item, names=not names and key in NAMED) for key, item in value.items()}
    return value


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
        + f"equita {md(results['equita'].get('version'))}; run {md(results['created'])}.",
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
        declared = presentation(name, metric["name"])
        table, figures = (declared.table, declared.figures) if declared else (_generic_table, ())
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
        lines += [table(_for_markdown(task["results"])), ""]
        if "judge" in task:
            lines += [judge_line(task["judge"], task.get("label_source", "rules")), ""]
        for suffix, plot in figures:
            file = plots / f"{path_part(name, 'task name')}-{suffix}.png"
            plot(_for_plot(task["results"]), plain(f"{name}: {model['id']}"), file)
            if file.exists():  # a plot with nothing to show writes no file
                lines += [f"![{md(name)} {suffix}](plots/{quote(file.name)})", ""]
    return "\n".join(lines)


def judge_line(judged, label_source="rules") -> str:
    """Which labels the scores use, and what the other reader gave (a results file is untrusted:
    any field of another shape is shown as unreadable, never a crash)."""
    number = lambda value: isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)  # noqa: E731
    by_judge = label_source == "judge"
    uses = "The scores above use the LLM judge's labels (rows it could not label left out)." if by_judge else "The scores above use the rules' labels."
    if not isinstance(judged, dict) or not isinstance(judged.get("agreement"), dict):
        return f"{uses} An LLM judge's record is here, in a shape this equita cannot read."
    agreed = judged["agreement"]
    kappa = f"{agreed['kappa']:.3f}" if number(agreed.get("kappa")) else "undefined"

    def scored(scores) -> str:
        if isinstance(scores, dict) and all(number(scores.get(key)) for key in ("bias_score", "ci_low", "ci_high")):
            return f"bias score {scores['bias_score']:+.3f} [{scores['ci_low']:+.3f}, {scores['ci_high']:+.3f}]"
        return "no answer as a label"

    counts = f"{agreed['n']} answers labelled, {agreed['unreadable']} unreadable" if number(agreed.get("n")) and number(agreed.get("unreadable")) else "counts unreadable"
    low = " **Low agreement: neither reading stands alone.**" if judged.get("warnings") == ["low_agreement"] else ""
    who = f"An LLM judge ({md(str(judged.get('model')))}, prompt v{md(str(judged.get('prompt_version')))})"
    if by_judge:
        read = f"{who} labelled the answers ({counts}); with the rules' labels the {scored(judged.get('rules_results'))}"
    else:
        read = f"{who} also read the answers: {scored(judged.get('results'))} ({counts})"
    return f"{uses} {read}; Cohen's kappa with the rules {kappa}.{low}"


def _number(value, p) -> str:
    return "-" if value is None else f"{value:+.3f}" if p.better == "closer" and p.unbiased == 0 else f"{value:.3f}"


def ranking_lines(ranking: TaskRanking) -> list[str]:
    """A task's ranking as Markdown: the table, then the paired differences with their intervals."""
    p = ranking.presentation
    order = "distance from the unbiased value " + f"({p.unbiased:g})" if p.better == "closer" else "score, higher first"
    body = []
    for s in ranking.standings:
        interval = f"[{_number(s.low, p)}, {_number(s.high, p)}]" if s.low is not None else "-"
        body.append([s.rank or "-", md(s.entry.label), _number(s.value, p), interval, s.letters or "-", md("; ".join(s.marks)) or "-"])
    labels = "" if ranking.labels == "rules" else f", labels by LLM {md(ranking.labels)}"
    lines = [f"### {md(ranking.task)} (dataset v{md(ranking.version)}{labels})", "", f"Ranked by {order}. {md(p.notes)}", "",
             tabulate(body, headers=["rank", "model", p.label, "95% CI", "group", "marks"], tablefmt="github", disable_numparse=True), ""]  # fmt: skip
    tested = [pair for pair in ranking.pairs if "error" not in pair]
    if tested:
        key = "distance_p_value" if p.better == "closer" else "p_value"
        rows = []
        for pair in tested:
            rows.append([md(pair["a"]), md(pair["b"]), f"{pair['difference']:+.3f}",
                         f"[{pair['ci_low']:+.3f}, {pair['ci_high']:+.3f}]" if pair["ci_low"] is not None else "-",
                         f"{pair['distance_difference']:+.3f}" if p.better == "closer" else "-",
                         f"{pair[key]:.4f}" if pair[key] is not None else "-", f"{pair['p_adjusted']:.4f}" if pair["p_adjusted"] is not None else "-",
                         pair["n_rows"], pair["n_units"]])  # fmt: skip
        headers = ["A", "B", "A - B", "95% CI (paired)", "distance A - B", "p", "p (Holm)", "shared rows", "units"]
        lines += ["Paired comparisons over the rows both models answered: " + tested[0]["method"] + ". Models sharing a group letter "
                  f"cannot be told apart (Holm-adjusted p >= {0.05})" + (", judged on the distance from the unbiased value." if p.better == "closer" else "."), "",
                  tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True), ""]  # fmt: skip
    lines += [md(f"{pair['a']} vs {pair['b']}: {pair['error']}.") for pair in ranking.pairs if "error" in pair]
    lines += [md(note) for note in ranking.notes]
    return lines + [""]


def comparison_report(entries: list[Entry], out: Path) -> str:
    lines = ["# equita comparison", ""]
    names = task_names(entries)
    rankings = [ranking for name in names for ranking in rank_task(name, entries)]
    version_notes = list(dict.fromkeys(ranking.version_note for ranking in rankings if ranking.version_note))
    if version_notes:
        lines += ["**Not comparable across dataset versions.** " + md(" ".join(version_notes)), ""]
    labels_notes = list(dict.fromkeys(ranking.labels_note for ranking in rankings if ranking.labels_note))
    if labels_notes:
        lines += ["**Not comparable across label sources.** " + md(" ".join(labels_notes)), ""]
    if not any(entry.samples for entry in entries):
        lines += ["No folder holds samples.jsonl: the rankings have no paired tests.", ""]
    lines += ["## Rankings", ""]
    for ranking in rankings:
        lines += ranking_lines(ranking)
    lines += ["## Per group", "", "The headline [95% CI] per task and group; a blank cell: the model has no result there.", ""]
    labels = [md(entry.label) for entry in entries]
    body = []
    for ranking in rankings:
        p = ranking.presentation
        members = {id(s.entry): s for s in ranking.standings}
        groups = list(dict.fromkeys(g for s in ranking.standings if s.task["results"] for g, _ in group_rows(s.task["results"], p.group_order)))
        for group in groups:
            cells = []
            for entry in entries:
                standing = members.get(id(entry))
                result = dict(group_rows(standing.task["results"], p.group_order)).get(group) if standing and standing.task["results"] else None
                cells.append(interval_text(result, p.headline, signed=p.unbiased == 0) if result and result.get(p.headline) is not None else "")
            body.append([f"{md(ranking.task)} (v{md(ranking.version)})", md(group), *cells])
    lines += [tabulate(body, headers=["task", "group", *labels], tablefmt="github", disable_numparse=True), ""]
    plotted = [ranking for ranking in rankings if ranking.presentation.groups]
    if plotted:
        comparison_plot(entries, plotted, out / "comparison.png")
        lines += ["![comparison](comparison.png)", ""]
    return "\n".join(lines)


def comparison_plot(entries: list[Entry], rankings: list[TaskRanking], path: Path) -> None:
    """Per task with groups: each model's headline per group, drawn from the unbiased value, with its interval."""
    figure, axes = plt.subplots(1, len(rankings), figsize=(5 * len(rankings), 6), squeeze=False, sharey=False)
    width = 0.8 / len(entries)
    for axis, ranking in zip(axes[0], rankings):
        p = ranking.presentation
        members = {id(s.entry): s for s in ranking.standings if s.task["results"]}
        groups = list(dict.fromkeys(g for s in members.values() for g, _ in group_rows(s.task["results"], p.group_order)))
        neutral = p.unbiased if p.unbiased is not None else p.scale[0]
        y = np.arange(len(groups))[::-1]
        for number, entry in enumerate(entries):
            standing = members.get(id(entry))
            by_group = dict(group_rows(standing.task["results"], p.group_order)) if standing else {}
            scores = np.array([by_group[g][p.headline] if g in by_group and by_group[g].get(p.headline) is not None else np.nan for g in groups])
            low = np.array([by_group[g].get("ci_low") if g in by_group and by_group[g].get("ci_low") is not None else s for g, s in zip(groups, scores)])
            high = np.array([by_group[g].get("ci_high") if g in by_group and by_group[g].get("ci_high") is not None else s for g, s in zip(groups, scores)])
            offset = y + (len(entries) / 2 - number - 0.5) * width
            axis.barh(offset, scores - neutral, left=neutral, height=width, label=plain(entry.label))
            axis.errorbar(scores, offset, xerr=np.clip(np.nan_to_num([scores - low, high - scores]), 0, None), fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        axis.axvline(neutral, color="black", linewidth=0.8)
        axis.set_yticks(y, [plain(group) for group in groups])
        axis.set_xlim(*p.scale)
        axis.set_title(plain(f"{ranking.task} (v{ranking.version})"))
        axis.set_xlabel(p.axis, fontsize="small")
    handles, names = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, names, loc="lower center", ncols=min(4, len(entries)), frameon=False)
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(all_results: list[dict], out: Path, samples: list[list[dict] | None] | None = None) -> Path:
    """report.md (one model) or comparison.md (several) in `out`, with their PNGs; returns the .md path.
    `samples`, one list per results (None where a folder has none), feeds the paired tests."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if len(all_results) == 1:
        path, text = out / "report.md", single_report(all_results[0], out)
    else:
        entries = [Entry(results, samples=(samples or [None] * len(all_results))[i]) for i, results in enumerate(all_results)]
        path, text = out / "comparison.md", comparison_report(entries, out)
    path.write_text(text, encoding="utf-8")
    return path
