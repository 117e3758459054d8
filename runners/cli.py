"""`equita`: one command line for building, running and publishing the benchmarks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..builders import TASKS, get_task
from ..builders.common import SOURCE_DIR_ENV, BuildError, file_in_the_way
from .backends.models import EMBEDDED, ModelError
from .data import DatasetError
from .tasks import EVAL_TASKS, TASK_GROUPS, presentation

# Each command imports what it runs when it runs (the Hub client, the statistics, the run itself),
# so that `equita --help`, `equita tasks` and a refused argument answer at once.

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Social bias and gender fairness benchmarks for Italian language models.")
console = Console(stderr=True, soft_wrap=True)


# Where the benchmark datasets are found: the same two options for run, bench, verify and leaderboard.
def datasets_option(panel: str | None = None):
    return Annotated[
        Optional[str],
        typer.Option("--datasets", metavar="DIR|ORG", rich_help_panel=panel,
                     help="Folder of `equita build` outputs, or a Hub organisation (its repositories at their version tags). Default: the cached build, then the Hub, then a local build."),
    ]  # fmt: skip


def source_dir_option(panel: str | None = None):
    return Annotated[
        Optional[Path],
        typer.Option("--source-dir", metavar="DIR", envvar=SOURCE_DIR_ENV, rich_help_panel=panel,
                     help="Upstream mirror (<org>/<repo>/<path>), for datasets built locally. Default: download the pinned files."),
    ]  # fmt: skip


DatasetsOption = datasets_option()
SourceDirOption = source_dir_option()


# The LLM judge of ItaP-AT answers: the same four options for run and rescore.
def judge_options(panel: str):
    server = Annotated[Optional[str], typer.Option("--judge-server", metavar="URL", rich_help_panel=panel,
                       help="Also label the generated ItaP-AT answers by an LLM judge on this OpenAI-compatible server (its base URL). Default: none.")]  # fmt: skip
    model = Annotated[Optional[str], typer.Option("--judge-model", metavar="NAME", rich_help_panel=panel, help="With --judge-server: the served judge model's name. Default: none.")]
    key = Annotated[Optional[str], typer.Option("--judge-api-key-env", metavar="VAR", rich_help_panel=panel,
                    help="With --judge-server: the variable holding its API key, never printed or recorded. Default: OPENAI_API_KEY, if set.")]  # fmt: skip
    labels = Annotated[str, typer.Option("--labels", metavar="rules|judge", rich_help_panel=panel,
                       help="Whose labels of the ItaP-AT answers the headline scores use: the rules' (the classifier) or the judge's (needs --judge-server); both are recorded.")]  # fmt: skip
    return server, model, key, labels


JudgeServerOption, JudgeModelOption, JudgeKeyOption, LabelsOption = judge_options("LLM judge")


def check_bertscore_layers(bertscore_model: str | None, bertscore_layers: int | None) -> None:
    """--bertscore-model without --bertscore-layers, for an encoder bert_score knows no layer of: exit 2."""
    if bertscore_model is not None and bertscore_layers is None:
        from bert_score.utils import model2layers

        if bertscore_model not in model2layers:
            # Refused now, not after every answer is generated: bert_score knows no best layer for it.
            console.print("[red]error:[/red] --bertscore-model needs --bertscore-layers N (the layer of that encoder to use; bert_score knows none for it)")
            raise typer.Exit(2)


def metric_model_options(bertscore_model, bertscore_layers, neutrality_model, neutrality_tokenizer) -> dict:
    """The GFG metrics' own models, as compute() options per metric (only those given)."""
    options: dict = {}
    for metric, key, value in [("gfg_detection", "model_type", bertscore_model), ("gfg_detection", "num_layers", bertscore_layers),
                               ("gente_neutrality", "model", neutrality_model), ("gente_neutrality", "tokenizer", neutrality_tokenizer)]:  # fmt: skip
        if value is not None:
            options.setdefault(metric, {})[key] = value
    return options


# The GFG metrics' models, for the commands that score without running a model (rescore, export, import).
BertscoreModelOption = Annotated[Optional[str], typer.Option("--bertscore-model", metavar="NAME", help="gfg detection: the BERTScore encoder, as for `equita run`. Default: bert-base-multilingual-cased.")]
BertscoreLayersOption = Annotated[Optional[int], typer.Option("--bertscore-layers", metavar="N", min=1, help="gfg detection: the encoder layer, as for `equita run`. Default: 9.")]
NeutralityModelOption = Annotated[Optional[str], typer.Option("--neutrality-model", metavar="NAME", help="gfg GeNTE tasks: the classifier, as for `equita run`. Default: FBK-MT/GeNTE-evaluator.")]
NeutralityTokenizerOption = Annotated[Optional[str], typer.Option("--neutrality-tokenizer", metavar="NAME", help="gfg GeNTE tasks: the classifier's tokenizer, as for `equita run`. Default: UmBERTo.")]


def judge_settings(server: str | None, model: str | None, key_env: str | None, labels: str):
    """The JudgeOptions of the four options (None without a judge); a bad combination exits with 2."""
    from .judge import JudgeOptions

    if (server is None) != (model is None) or (key_env and server is None):
        console.print("[red]error:[/red] --judge-server and --judge-model go together (and --judge-api-key-env with them)")
        raise typer.Exit(2)
    if labels not in ("rules", "judge"):
        console.print(f"[red]error:[/red] --labels {escape(labels)!s:.40}: 'rules' or 'judge'")
        raise typer.Exit(2)
    if labels == "judge" and server is None:
        console.print("[red]error:[/red] --labels judge needs an LLM judge: --judge-server URL --judge-model NAME")
        raise typer.Exit(2)
    return JudgeOptions(server, model, key_env) if server else None


def batch_size_value(value: str) -> int | str:
    """--batch-size: "auto" or a whole number of rows, at least 1."""
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise typer.BadParameter(f"{value!r}: use auto or a whole number of at least 1")


def bench_batch_size_value(value: str) -> int | str:
    """bench's --batch-size: "sweep", "auto" or a whole number of at least 1."""
    return "sweep" if str(value).strip().lower() == "sweep" else batch_size_value(value)


@app.callback()
def _root() -> None:
    """Keeps `equita build` a subcommand even while it is the only one."""


@app.command()
def build(
    task: Annotated[str, typer.Argument(help=f"Dataset to build: {', '.join(s.cli_name for s in TASKS.values())}.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder, laid out like a Hub dataset repo.")],
    source_dir: Annotated[
        Optional[Path],
        typer.Option("--source-dir", envvar=SOURCE_DIR_ENV, help="Mirror of the upstream files, as <org>/<repo>/<path>; default: download pinned revisions."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty output folder (an earlier equita build only). Default: off.")] = False,
    gfl_it: Annotated[
        Optional[Path], typer.Option("--gfl-it", help="gfg only: the GFL-it corpus file you hold (not public); adds its configs. Default: none, the GFL-it configs are left out.")
    ] = None,
) -> None:
    """Build a dataset folder (parquet configs, card, manifest) from upstream sources and the project's tables."""
    try:
        spec = get_task(task)
    except KeyError as error:
        console.print(f"[red]error:[/red] {escape(error.args[0])}")
        raise typer.Exit(2) from None
    options = {}
    if gfl_it is not None:
        if spec.id != "gfg":
            console.print(f"[red]error:[/red] --gfl-it applies to gfg only, not {escape(spec.cli_name)}")
            raise typer.Exit(2)
        options["gfl_it"] = gfl_it
    try:
        manifest = spec.build_to(out, source_dir=source_dir, force=force, **options)
    except BuildError as error:
        console.print(f"[red]build failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as error:  # outside --out (the builders name --out's own errors): a full source cache, say
        console.print(f"[red]build failed:[/red] {escape(str(error.filename or out))}: {escape(error.strerror or str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted:[/yellow] {escape(str(out))} is as it was (a build appears whole or not at all)")
        raise typer.Exit(130) from None
    table = Table(title=f"{spec.title} v{spec.version} -> {out}")
    table.add_column("file")
    table.add_column("bytes", justify="right")
    table.add_column("sha256")
    for name, entry in manifest["files"].items():
        table.add_row(name, str(entry["bytes"]), entry["sha256"][:16])
    Console().print(table)


def _log(message: str) -> None:
    console.print(escape(message), highlight=False)


# `equita run --help` in panels: what to run, then one panel per kind of model and what else it may load or reach.
RUN, LOCAL, SERVER, GFG, HUB = "What to run", "Model in this process", "Model on a server", "GFG metrics' models", "Submit to the Hub"


@app.command()
def run(
    model: Annotated[str, typer.Option("--model", metavar="MODEL", rich_help_panel=RUN, help=f"Short name ({', '.join(EMBEDDED)}), a .gguf file, a checkpoint folder, or a Hub id; with --server, the served model's name.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", rich_help_panel=RUN, help="Results folder: results.json, samples.jsonl, report.md, plots/, requests.jsonl (the resume cache).")],
    tasks: Annotated[str, typer.Option("--tasks", metavar="TASKS", rich_help_panel=RUN, help=f"Comma-separated tasks or groups: {', '.join(TASK_GROUPS)}, {', '.join(EVAL_TASKS)}.")] = "all",
    datasets: datasets_option(RUN) = None,
    source_dir: source_dir_option(RUN) = None,
    limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", min=1, rich_help_panel=RUN, help="Only N rows per task, spread over the dataset (a quick look). Default: every row.")] = None,
    batch_size: Annotated[
        str,
        typer.Option("--batch-size", metavar="N|auto", callback=batch_size_value, rich_help_panel=RUN,
                     help="Rows per forward pass, or auto: the largest that is still faster per request here, measured on the first batches; halved on out-of-memory."),
    ] = "auto",
    revision: Annotated[Optional[str], typer.Option("--revision", metavar="REVISION", rich_help_panel=LOCAL, help="Hub model revision (branch, tag or commit); with --server, the served commit to record. Default: main (unpinned with --server).")] = None,
    device: Annotated[str, typer.Option("--device", metavar="DEVICE", rich_help_panel=LOCAL, help="auto (CUDA if present, else CPU), cpu, cuda, cuda:1, ...")] = "auto",
    dtype: Annotated[str, typer.Option("--dtype", metavar="DTYPE", rich_help_panel=LOCAL, help="auto (float32 on CPU, bfloat16 on GPU), float32, bfloat16, float16.")] = "auto",
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", rich_help_panel=LOCAL, help="Run code shipped with a Hub model. Default: off.")] = False,
    server: Annotated[
        Optional[str], typer.Option("--server", metavar="URL", rich_help_panel=SERVER, help="Score a model served over the OpenAI HTTP protocol (vLLM, SGLang, llama.cpp, an API): its base URL, e.g. http://127.0.0.1:8000/v1. Default: none, the model runs in this process.")
    ] = None,
    api_key_env: Annotated[Optional[str], typer.Option("--api-key-env", metavar="VAR", rich_help_panel=SERVER, help="The environment variable holding the API key, never printed or recorded. Default: OPENAI_API_KEY, if set.")] = None,
    tokenizer: Annotated[
        Optional[str], typer.Option("--tokenizer", metavar="NAME", rich_help_panel=SERVER, help="The model's tokenizer (short name, folder or Hub id), for log-likelihood tasks. Default: the server's /tokenize.")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", metavar="N", min=1, rich_help_panel=SERVER, help="Requests in flight.")] = 8,
    request_timeout: Annotated[float, typer.Option("--request-timeout", metavar="SECONDS", min=0.1, rich_help_panel=SERVER, help="Seconds to wait for one answer before retrying.")] = 120.0,
    max_retries: Annotated[int, typer.Option("--max-retries", metavar="N", min=0, rich_help_panel=SERVER, help="Retries of a request (429, 5xx, timeouts, dropped connections), with exponential backoff.")] = 6,
    bertscore_model: Annotated[
        Optional[str], typer.Option("--bertscore-model", metavar="NAME", rich_help_panel=GFG, help="gfg detection: the BERTScore encoder, name or local path. Default: bert-base-multilingual-cased.")
    ] = None,
    bertscore_layers: Annotated[Optional[int], typer.Option("--bertscore-layers", metavar="N", min=1, rich_help_panel=GFG, help="gfg detection: the encoder layer to use. Default: 9.")] = None,
    neutrality_model: Annotated[
        Optional[str], typer.Option("--neutrality-model", metavar="NAME", rich_help_panel=GFG, help="gfg GeNTE tasks: the neutral/gendered classifier, name or local path. Default: FBK-MT/GeNTE-evaluator.")
    ] = None,
    neutrality_tokenizer: Annotated[Optional[str], typer.Option("--neutrality-tokenizer", metavar="NAME", rich_help_panel=GFG, help="gfg GeNTE tasks: the classifier's tokenizer. Default: UmBERTo (Musixmatch's umberto-commoncrawl-cased-v1).")] = None,
    judge_server: JudgeServerOption = None,
    judge_model: JudgeModelOption = None,
    judge_api_key_env: JudgeKeyOption = None,
    labels: LabelsOption = "rules",
    push: Annotated[bool, typer.Option("--push", rich_help_panel=HUB, help="At the end, submit the results as pull requests (needs --results-repo), like `equita submit`. Default: off.")] = False,
    results_repo: Annotated[Optional[str], typer.Option("--results-repo", metavar="ORG/NAME", rich_help_panel=HUB, help="With --push: the central results dataset, ORG/NAME. Default: none.")] = None,
    model_repo: Annotated[Optional[str], typer.Option("--model-repo", metavar="ORG/NAME", rich_help_panel=HUB, help="With --push: also open a pull request on this model repo. Default: none.")] = None,
    datasets_org: Annotated[str, typer.Option("--datasets-org", metavar="ORG", rich_help_panel=HUB, help="With --push: where the benchmark datasets are published.")] = "equita",
) -> None:
    """Score a model on the benchmarks; rerun the same command to resume an interrupted run."""
    from .hub.publish import PublishError, submit_results
    from .results.contract import headline
    from .run import RunOptions
    from .run import run as run_tasks

    if server is None and (api_key_env or tokenizer):
        console.print("[red]error:[/red] --api-key-env and --tokenizer apply with --server only")
        raise typer.Exit(2)
    if server is not None and (trust_remote_code or device != "auto" or dtype != "auto"):
        console.print("[red]error:[/red] --device, --dtype and --trust-remote-code are the server's settings, not equita's, with --server")
        raise typer.Exit(2)
    if push and not results_repo:
        console.print("[red]error:[/red] --push needs --results-repo ORG/NAME")
        raise typer.Exit(2)
    from .backends.server import MAX_REQUEST_TIMEOUT

    if not request_timeout <= MAX_REQUEST_TIMEOUT:  # inf or 1e12 would overflow the clock arithmetic
        console.print(f"[red]error:[/red] --request-timeout {request_timeout:g}: at most {MAX_REQUEST_TIMEOUT:g} seconds (an hour)")
        raise typer.Exit(2)
    judge = judge_settings(judge_server, judge_model, judge_api_key_env, labels)
    if str(out) in ("", "."):
        # An unset variable ("--out $OUT") would scatter results.json, samples.jsonl and plots/ here.
        console.print("[red]error:[/red] --out must name a results folder, not the current folder")
        raise typer.Exit(2)
    check_bertscore_layers(bertscore_model, bertscore_layers)
    if push:
        from .hub.publish import check_repo_id

        try:  # the Hub ids, before the model loads and the tasks run
            check_repo_id(results_repo, "--results-repo")
            if model_repo is not None:
                check_repo_id(model_repo, "--model-repo")
        except PublishError as error:
            console.print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
            raise typer.Exit(2) from None
    metric_options = metric_model_options(bertscore_model, bertscore_layers, neutrality_model, neutrality_tokenizer)
    options = RunOptions(
        model=model, out=out, tasks=tasks, datasets=datasets, source_dir=source_dir, limit=limit, batch_size=batch_size,
        revision=revision, device=device, dtype=dtype, trust_remote_code=trust_remote_code, metric_options=metric_options,
        server=server, api_key_env=api_key_env, tokenizer=tokenizer, concurrency=concurrency, request_timeout=request_timeout,
        max_retries=max_retries, judge=judge, label_source=labels,
    )  # fmt: skip
    try:
        results = run_tasks(options, log=_log)
    except KeyError as error:
        console.print(f"[red]error:[/red] {escape(error.args[0])}")
        raise typer.Exit(2) from None
    except (ModelError, DatasetError, ValueError) as error:
        console.print(f"[red]run failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as error:
        # A full disk, a folder made read-only or removed mid-run: what was saved stays saved.
        where = f"{error.filename}: " if error.filename else ""
        console.print(f"[red]run failed:[/red] {escape(where + (error.strerror or str(error)))}; answers so far are saved in "
                      f"{escape(str(out / 'requests.jsonl'))}, rerun the same command to resume", highlight=False)  # fmt: skip
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted:[/yellow] answers so far are saved in {escape(str(out / 'requests.jsonl'))}; rerun the same command to resume")
        raise typer.Exit(130) from None
    table = Table(title=f"{model} -> {out}")
    for column in ("task", "metric", "score", "95% CI", "n", "warnings"):
        table.add_column(column)
    for name, task in results["tasks"].items():
        r = task["results"]
        if r is None:
            table.add_row(name, task["metric"]["name"], "not computed", "-", str(task["n"]), escape(str(task.get("not_computed") or "see report.md"))[:160])
            continue
        key, value = headline(task)
        declared = presentation(name, task["metric"]["name"])
        unbiased = f" ({declared.unbiased:g} unbiased)" if declared and declared.unbiased is not None else ""
        interval = "-" if r.get("ci_low") is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        table.add_row(name, task["metric"]["name"], f"{key} {value:.3f}{unbiased}", interval, str(task["n"]), ", ".join(r.get("warnings", [])) or "-")
    Console().print(table)
    for name, task in results["tasks"].items():
        if task.get("judge") is not None:
            _log(f"{name}: {judge_summary(task, headline(task)[0])}" if task["results"] else f"{name}: not computed with the judge's labels")
    console.print(f"wrote {escape(str(out))}/results.json, samples.jsonl, report.md")
    if push:
        try:
            opened = submit_results(out, results_repo, model_repo=model_repo, datasets_org=datasets_org, log=_log)
        except PublishError as error:
            console.print(f"[red]push failed:[/red] {escape(str(error))} (the results are saved; run `equita submit {escape(str(out))}` later)", highlight=False)
            raise typer.Exit(1) from None
        print("\n".join(opened))


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="One or more results folders of `equita run`.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to write; default: the folder itself for one, ./comparison for several.")] = None,
) -> None:
    """Write report.md (one results folder) or comparison.md with one table and one figure (several)."""
    from .results.contract import ResultsError, load_results, load_samples
    from .results.report import write_report

    try:
        loaded = [load_results(folder) for folder in results]
        samples = [load_samples(folder) for folder in results]  # for the paired tests of a comparison
    except ResultsError as error:
        console.print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    target = out or (results[0] if len(results) == 1 else Path("comparison"))
    blocked = file_in_the_way(target)
    if blocked:
        console.print(f"[red]error:[/red] --out {escape(str(target))}: {escape(blocked)}", highlight=False)
        raise typer.Exit(1)
    try:
        path = write_report(loaded, target, samples)
    except OSError as error:
        console.print(f"[red]error:[/red] {escape(str(target))}: cannot be written ({escape(error.strerror or str(error))})", highlight=False)
        raise typer.Exit(1) from None
    console.print(f"wrote {escape(str(path))}")


@app.command()
def publish(
    folder: Annotated[Path, typer.Argument(help="A dataset folder built by `equita build`.")],
    repo_id: Annotated[str, typer.Option("--repo-id", help="Hub dataset repository, ORG/NAME.")],
    version: Annotated[str, typer.Option("--version", help="The version the folder was built as (its card's); tagged vX.Y.Z.")],
) -> None:
    """Upload a built dataset to the Hub in one commit and tag it; the token comes from `hf auth login` or HF_TOKEN."""
    from .hub.publish import PublishError, publish_dataset

    try:
        commit, tag = publish_dataset(folder, repo_id, version, log=_log)
    except PublishError as error:
        console.print(f"[red]publish failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    print(f"commit {commit}\ntag {tag}")


@app.command("publish-metric")
def publish_metric_command(
    folder: Annotated[Path, typer.Argument(help="A metric folder, e.g. metrics/itap_at_bias.")],
    repo_id: Annotated[str, typer.Option("--repo-id", help="Hub Space, ORG/NAME (NAME becomes the module name).")],
) -> None:
    """Publish an evaluate metric module as a Gradio Space, so that evaluate.load("ORG/NAME") works."""
    from .hub.publish import PublishError, publish_metric

    try:
        commit = publish_metric(folder, repo_id, log=_log)
    except PublishError as error:
        console.print(f"[red]publish failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    print(f"commit {commit}")


@app.command()
def submit(
    results_dir: Annotated[Path, typer.Argument(help="A results folder of `equita run`.")],
    results_repo: Annotated[str, typer.Option("--results-repo", help="The central results dataset, ORG/NAME.")],
    model_repo: Annotated[Optional[str], typer.Option("--model-repo", help="Also open a pull request with .eval_results/*.yaml on this model repo. Default: none.")] = None,
    datasets_org: Annotated[str, typer.Option("--datasets-org", help="Where the benchmark datasets are published.")] = "equita",
) -> None:
    """Open pull requests with a run's results (never a direct push); a repeated submission opens nothing new."""
    from .hub.publish import PublishError, submit_results

    try:
        opened = submit_results(results_dir, results_repo, model_repo=model_repo, datasets_org=datasets_org, log=_log)
    except PublishError as error:
        console.print(f"[red]submit failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    print("\n".join(opened))


@app.command()
def bench(
    model: Annotated[str, typer.Option("--model", help="The model every tool runs (as for `equita run`).")] = "smollm2",
    out: Annotated[Path, typer.Option("--out", help="Folder for bench.json, bench.md and work/ (prompts, lm-eval YAMLs, per-run logs).")] = Path("bench"),
    workloads: Annotated[str, typer.Option("--workloads", help="Comma-separated: itap-at, jobs, gfg, suite (`equita run --tasks bias` end to end).")] = "itap-at,jobs,gfg",
    tools: Annotated[str, typer.Option("--tools", help="Comma-separated: equita, lm-eval, naive (equita is always the reference).")] = "equita,lm-eval,naive",
    batch_size: Annotated[
        str, typer.Option("--batch-size", callback=bench_batch_size_value,
                          help="sweep: each tool at its own best fixed size (a short sweep of 8, 16, 32, 64, recorded), and both at 32; auto: each tool's own sizing (lm-eval's auto probe); a number: the same for equita and lm-eval.")
    ] = "sweep",
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Repetitions per tool; medians are reported.")] = 3,
    limit: Annotated[
        Optional[list[str]], typer.Option("--limit", help="WORKLOAD=N requests (or 'all'); defaults: itap-at=128, jobs=all, gfg=32, suite=all (N: equita run's --limit).")
    ] = None,
    device: Annotated[str, typer.Option("--device", help="cpu, cuda, ...")] = "cpu",
    dtype: Annotated[str, typer.Option("--dtype", help="float32, bfloat16, float16.")] = "float32",
    datasets: DatasetsOption = None,
    source_dir: SourceDirOption = None,
) -> None:
    """Time equita's runner against lm-evaluation-harness and a plain transformers loop on the same prompts."""
    from .bench.bench import BenchError, BenchOptions
    from .bench.bench import bench as run_bench

    limits = {}
    for item in limit or []:
        name, _, value = item.partition("=")
        if not value or not (value == "all" or value.isdigit() and int(value) > 0):
            console.print(f"[red]error:[/red] --limit {escape(item)}: use WORKLOAD=N (N >= 1) or WORKLOAD=all")
            raise typer.Exit(2)
        if name in limits:  # the second would silently win
            console.print(f"[red]error:[/red] --limit {escape(name)} is given twice")
            raise typer.Exit(2)
        limits[name] = None if value == "all" else int(value)
    options = BenchOptions(
        model=model, out=out, workloads=tuple(w.strip() for w in workloads.split(",") if w.strip()),
        tools=tuple(t.strip() for t in tools.split(",") if t.strip()), batch_size=batch_size, repeats=repeats,
        limits=limits, device=device, dtype=dtype, datasets=datasets, source_dir=source_dir,
    )  # fmt: skip
    blocked = file_in_the_way(out)
    if blocked:
        console.print(f"[red]error:[/red] --out {escape(str(out))}: {escape(blocked)}", highlight=False)
        raise typer.Exit(1)
    try:
        run_bench(options, log=_log)
    except (BenchError, ModelError, DatasetError) as error:
        console.print(f"[red]bench failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    print((out / "bench.md").read_text())


def judge_summary(task: dict, headline: str) -> str:
    """One line on a judged task: the score under each label source, the agreement, the warning."""
    judged, source = task["judge"], task.get("label_source", "rules")
    agreed = judged["agreement"]

    def scored(scores) -> str:
        return f"{scores['bias_score']:+.3f} [{scores['ci_low']:+.3f}, {scores['ci_high']:+.3f}]" if scores and scores["ci_low"] is not None else "no label" if not scores else f"{scores['bias_score']:+.3f}"

    kappa = "undefined" if agreed["kappa"] is None else f"{agreed['kappa']:.3f}"
    whose = "judge's" if source == "judge" else "rules'"
    return (f"{headline} with the rules' labels {scored(judged['rules_results'])}, with judge {judged['model']}'s {scored(judged['results'])} "
            f"({agreed['n']} labelled, {agreed['unreadable']} unreadable); Cohen's kappa {kappa}; the headline uses the {whose} labels"
            + ("; LOW AGREEMENT" if judged["warnings"] else ""))  # fmt: skip


@app.command()
def rescore(
    results_dir: Annotated[Path, typer.Argument(help="A results folder of `equita run` (results.json and samples.jsonl); it is only read.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="The new results folder (results.json, samples.jsonl, report.md); empty or new, outside RESULTS_DIR.")],
    datasets: DatasetsOption = None,
    source_dir: SourceDirOption = None,
    bertscore_model: BertscoreModelOption = None,
    bertscore_layers: BertscoreLayersOption = None,
    neutrality_model: NeutralityModelOption = None,
    neutrality_tokenizer: NeutralityTokenizerOption = None,
    judge_server: JudgeServerOption = None,
    judge_model: JudgeModelOption = None,
    judge_api_key_env: JudgeKeyOption = None,
    labels: LabelsOption = "rules",
) -> None:
    """Score a results folder again from its samples with the metrics installed now; no model is loaded."""
    from .results.rescore import RescoreError
    from .results.rescore import rescore as rescore_folder

    judge = judge_settings(judge_server, judge_model, judge_api_key_env, labels)

    metric_options = metric_model_options(bertscore_model, bertscore_layers, neutrality_model, neutrality_tokenizer)
    try:
        rescored, changes = rescore_folder(results_dir, out, datasets=datasets, source_dir=source_dir, metric_options=metric_options, judge=judge,
                                          label_source=labels, log=_log)  # fmt: skip
    except (RescoreError, DatasetError, ModelError, ValueError) as error:
        console.print(f"[red]rescore failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as error:
        console.print(f"[red]rescore failed:[/red] {escape(str(error.filename or out))}: {escape(error.strerror or str(error))}", highlight=False)
        raise typer.Exit(1) from None
    def shown(value, low, high) -> str:
        return f"{value:+.3f}" + (f" [{low:+.3f}, {high:+.3f}]" if low is not None and high is not None else "")

    for name, task in rescored["tasks"].items():
        change = changes.get(name)
        if change is None:
            continue
        before = task["rescored"]
        if task["results"] is None:
            _log(f"{name}: not computed: {task['not_computed']}")
            continue
        versions = f"; classifier {before['classifier_version_before']} -> {task['results'].get('classifier_version')}" if before.get("classifier_version_before") else ""
        _log(f"{name}: {task['metric']['name']} {before['module_sha256_before'][:12]} -> {task['metric']['module_sha256'][:12]}{versions}")
        _log(f"{name}: {change.headline} {shown(*change.before)} -> {shown(*change.after)}")
        moved = sorted(((old, new), count) for (old, new), count in change.labels.items() if old != new)
        if change.labels:
            _log(f"{name}: labels changed: " + (", ".join(f"{old} -> {new}: {count}" for (old, new), count in moved) if moved else f"none of {sum(change.labels.values())}"))
        judged = task.get("judge")
        if judged is not None:
            _log(f"{name}: {judge_summary(task, change.headline)}")
    _log(f"wrote {out}/results.json, samples.jsonl, report.md")


export_app = typer.Typer(no_args_is_help=True, help="Write equita's tasks for another harness.")
import_app = typer.Typer(no_args_is_help=True, help="Read another harness's run of equita's tasks as an equita results folder.")
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")


@export_app.command("lm-eval")
def export_lm_eval(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="The lm-eval task folder to write (YAMLs, utils.py), for `lm_eval --include_path DIR`.")],
    tasks: Annotated[str, typer.Option("--tasks", help="Comma-separated tasks or groups (bias, gfg, all), as for `equita run`.")] = "all",
    datasets: DatasetsOption = None,
    datasets_org: Annotated[Optional[str], typer.Option("--datasets-org", metavar="ORG", help="Read the datasets from this Hub organisation's repositories, at their version tags (the same as --datasets ORG).")] = None,
    source_dir: SourceDirOption = None,
    limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", min=1, help="Also write samples-limit-N.json: the rows `equita run --limit N` takes, for lm-eval's --samples.")] = None,
    bertscore_model: BertscoreModelOption = None,
    bertscore_layers: BertscoreLayersOption = None,
    neutrality_model: NeutralityModelOption = None,
    neutrality_tokenizer: NeutralityTokenizerOption = None,
) -> None:
    """Write equita's tasks as lm-evaluation-harness 0.4 tasks: `lm_eval --include_path DIR --tasks equita_bias`."""
    from .lmeval.export import ExportError, export, group_name, lm_eval_name
    from .tasks import select_tasks

    if datasets is not None and datasets_org is not None:
        console.print("[red]error:[/red] --datasets and --datasets-org: give one")
        raise typer.Exit(2)
    if datasets_org is not None and not re.fullmatch(r"[A-Za-z0-9][\w.-]*", datasets_org):
        console.print(f"[red]error:[/red] --datasets-org {escape(datasets_org)!s:.60}: not a Hub organisation name")
        raise typer.Exit(2)
    check_bertscore_layers(bertscore_model, bertscore_layers)
    try:
        names = [task.name for task in select_tasks(tasks)]
        options = metric_model_options(bertscore_model, bertscore_layers, neutrality_model, neutrality_tokenizer)
        written = export(out, names, datasets=datasets_org or datasets, source_dir=source_dir, metric_options=options, limit=limit, log=_log)
    except KeyError as error:
        console.print(f"[red]error:[/red] {escape(error.args[0])}")
        raise typer.Exit(2) from None
    except (ExportError, DatasetError, ValueError) as error:
        console.print(f"[red]export failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as error:
        console.print(f"[red]export failed:[/red] {escape(str(error.filename or out))}: {escape(error.strerror or str(error))}", highlight=False)
        raise typer.Exit(1) from None
    _log(f"wrote {len(written)} files in {out}: " + ", ".join(path.name for path in written))
    groups = [path.stem for path in written if path.stem.startswith("equita_") and path.stem in (group_name("bias"), group_name("gfg"))]
    samples = f" --samples {out}/samples-limit-{limit}.json" if limit else ""
    _log(f"run: lm_eval --model hf --model_args pretrained=MODEL --include_path {out} --tasks {','.join(groups) or lm_eval_name(names[0])} "
         f"--apply_chat_template --log_samples --output_path OUT{samples}")  # fmt: skip
    _log(f"then: equita import lm-eval OUT --out RESULTS_DIR")


@import_app.command("lm-eval")
def import_lm_eval(
    output_path: Annotated[Path, typer.Argument(help="lm_eval's --output_path (or its results_<date>.json), from a run with --log_samples.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="The results folder to write (results.json, samples.jsonl, report.md); empty or new.")],
    datasets: DatasetsOption = None,
    source_dir: SourceDirOption = None,
    bertscore_model: BertscoreModelOption = None,
    bertscore_layers: BertscoreLayersOption = None,
    neutrality_model: NeutralityModelOption = None,
    neutrality_tokenizer: NeutralityTokenizerOption = None,
) -> None:
    """Score an lm-eval run of the exported tasks with equita's metrics, as an equita results folder."""
    from .lmeval.importing import LmEvalImportError
    from .lmeval.importing import import_lm_eval as read_lm_eval
    from .results.contract import headline

    if str(out) in ("", "."):
        console.print("[red]error:[/red] --out must name a results folder, not the current folder")
        raise typer.Exit(2)
    check_bertscore_layers(bertscore_model, bertscore_layers)
    try:
        options = metric_model_options(bertscore_model, bertscore_layers, neutrality_model, neutrality_tokenizer)
        results = read_lm_eval(output_path, out, datasets=datasets, source_dir=source_dir, metric_options=options, log=_log)
    except (LmEvalImportError, DatasetError, ModelError, ValueError) as error:
        console.print(f"[red]import failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as error:
        console.print(f"[red]import failed:[/red] {escape(str(error.filename or out))}: {escape(error.strerror or str(error))}", highlight=False)
        raise typer.Exit(1) from None
    for name, task in results["tasks"].items():
        if task["results"] is None:
            _log(f"{name}: not computed: {task['not_computed']}")
        else:
            key, value = headline(task)
            _log(f"{name}: {key} {value:.3f} over {task['n']} rows")
    _log(f"wrote {out}/results.json, samples.jsonl, report.md (lm-eval {results['imported_from']['version']})")


@app.command()
def verify(
    results_dir: Annotated[Path, typer.Argument(help="A results folder of `equita run` (results.json and samples.jsonl).")],
    datasets: DatasetsOption = None,
    source_dir: SourceDirOption = None,
) -> None:
    """Recompute every score from samples.jsonl and check it equals results.json; exit 0 when all verify, 1 when not."""
    from .results.verify import VerifyError, verify_folder

    try:
        verification = verify_folder(results_dir, datasets=datasets, source_dir=source_dir, log=_log)
    except VerifyError as error:
        console.print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from None
    table = Table(title=f"verify {results_dir}")
    for column in ("task", "status", "first problem"):
        table.add_column(column)
    colour = {"verified": "green", "mismatch": "red", "not verifiable": "yellow", "not computed": "dim"}
    for name, entry in verification["tasks"].items():
        first = entry["problems"][0] if entry["problems"] else "-"
        more = f" (+{len(entry['problems']) - 1} more)" if len(entry["problems"]) > 1 else ""
        table.add_row(escape(name), f"[{colour[entry['status']]}]{entry['status']}[/]", escape(first) + more)
    Console().print(table)
    # Every problem in full, one line each (the table's column cuts them).
    for name, entry in verification["tasks"].items():
        for problem in entry["problems"]:
            _log(f"{name}: {entry['status']}: {problem}")
    if not verification["verified"]:
        raise typer.Exit(1)


@app.command()
def leaderboard(
    results: Annotated[Optional[list[Path]], typer.Argument(help="Results folders of `equita run` to show.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder for the site (index.html, task and model pages, files/); an earlier site there is replaced.")] = Path("leaderboard"),
    results_repo: Annotated[Optional[str], typer.Option("--results-repo", help="Also show the results dataset on the Hub, ORG/NAME: merged and pending (open pull requests). Default: none, the folders only.")] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Recompute every score from its samples (`equita verify`) and mark the outcome.")] = True,
    datasets: DatasetsOption = None,
    source_dir: SourceDirOption = None,
    publish_site: Annotated[bool, typer.Option("--publish", help="Upload the site as a static Hugging Face Space (needs --space). Default: off.")] = False,
    space: Annotated[Optional[str], typer.Option("--space", help="With --publish: the Space, ORG/NAME. Default: none.")] = None,
) -> None:
    """Build the leaderboard, a static site (rankings with intervals, per-group heatmaps, paired comparisons, model pages)."""
    from .hub import leaderboard as board
    from .hub.publish import PublishError, check_repo_id

    if publish_site and not space:
        console.print("[red]error:[/red] --publish needs --space ORG/NAME")
        raise typer.Exit(2)
    if space and not publish_site:
        console.print("[red]error:[/red] --space applies with --publish only")
        raise typer.Exit(2)
    if space:
        try:
            check_repo_id(space, "--space")  # before the Hub is read and the site built
        except PublishError as error:
            console.print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
            raise typer.Exit(2) from None
    try:
        board.check_out(out, results or [])  # before anything is read: --out must not hold what it would replace
        entries = board.local_entries(results or [], log=_log)
        if results_repo:
            entries += board.hub_entries(results_repo, log=_log)
        if verify:
            board.verify_entries(entries, datasets, source_dir, log=_log)
        index = board.build_site(entries, out, inputs=results or [], log=_log)
        if publish_site:
            print(f"commit {board.publish_site(out, space, log=_log)}")
    except board.LeaderboardError as error:
        console.print(f"[red]leaderboard failed:[/red] {escape(str(error))}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as error:
        console.print(f"[red]leaderboard failed:[/red] {escape(str(out))}: cannot be written ({escape(error.strerror or str(error))})", highlight=False)
        raise typer.Exit(1) from None
    console.print(f"wrote {escape(str(index))}")


@app.command("tasks")
def list_tasks() -> None:
    """List the tasks `equita run` knows, and the groups `--tasks` takes."""
    # The name is what a user copies: it never wraps or shrinks; the description takes what width is left.
    table = Table(show_lines=True)
    table.add_column("task", no_wrap=True, min_width=max(len(name) for name in EVAL_TASKS))
    table.add_column("what it scores", ratio=1)
    for task in EVAL_TASKS.values():
        where = f"{task.dataset.id} v{task.dataset.version}, config {task.config}; metric {task.metric}"
        table.add_row(task.name, f"{escape(task.description)}\n[dim]{escape(where)}[/dim]")
    Console().print(table)
    for group, members in TASK_GROUPS.items():
        Console().print(f"[bold]{group}[/bold]: {', '.join(members)}", highlight=False)


def main() -> None:
    app()


if __name__ == "__main__":  # `python -m equita.runners.cli`, the same as the `equita` command
    main()
