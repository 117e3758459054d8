"""`equita bench`: the same-work checks, the files it gives lm-eval, the report, and a real run end to end.

No test here asserts a timing: speed is what the benchmark measures, not what the suite checks.
"""

from __future__ import annotations

import json
import os
import subprocess
from importlib import metadata

import pytest
import torch

from conftest import EQUITA

from typer.testing import CliRunner

from equita.builders import get_task
from equita.runners.bench import bench
from equita.runners.cli import app

FAR = 5.0  # a gap no rounding explains


@pytest.mark.parametrize(
    "reference, other, gaps, same, identical, ties",
    [
        (["a", "b"], ["a", "b"], {}, True, 2, 0),
        (["a", "b"], ["a", "c"], {1: 2e-4}, True, 1, 1),  # parted at a near-tie
        (["a", "b"], ["a", "c"], {1: FAR}, False, 1, 0),  # parted where the model was sure
        (["a", "b"], ["a", "c"], {1: None}, False, 1, 0),  # the parting tokens are not its top two
    ],
)
def test_greedy_answers_must_match_or_part_at_a_near_tie(reference, other, gaps, same, identical, ties):
    result = bench.compare_texts(reference, other, lambda i, a, b: gaps[i])
    assert result["same_work"] is same
    assert result["identical"] == identical
    assert len(result["near_ties"]) == ties
    if not same:
        assert result["why"] == "1 answers differ beyond a near-tie"
        assert result["differences"][0]["request"] == 1


def test_different_numbers_of_answers_are_different_work():
    assert bench.compare_texts(["a"], ["a", "b"], lambda *_: 0.0) == {"same_work": False, "why": "1 answers against 2"}


@pytest.mark.parametrize(
    "other, same, worst",
    [
        ([[-1.0, -2.0], [-3.0]], True, 0.0),
        ([[-1.00005, -2.0], [-3.0]], True, 5e-5),
        ([[-1.0, -2.0003], [-3.0]], False, 3e-4),
    ],
)
def test_logprobs_must_agree_within_the_tolerance(other, same, worst):
    result = bench.compare_logprobs([[-1.0, -2.0], [-3.0]], other)
    assert result["same_work"] is same
    assert result["max_logprob_diff"] == pytest.approx(worst, abs=1e-9)


@pytest.mark.parametrize(
    "other, truth, same, equita_error",
    [
        # The peer is 3e-4 off and equita matches one-sequence scoring: the peer's rounding, the same work.
        ([[-1.0003, -2.0003], [-3.0]], [-1.00001, -2.0], True, 1e-5),
        # Both 1.2e-4 from one-sequence scoring (equita no further than the peer): rounding in both, the same work.
        ([[-1.00011, -2.00011], [-3.0]], [-0.99988, -2.0], True, 1.2e-4),
        # Equita is the one off the one-sequence values: not the same work.
        ([[-1.0003, -2.0003], [-3.0]], [-1.0003, -2.0003], False, 3e-4),
        # Beyond float rounding (a token's worth of difference): never rescored, different work.
        ([[-1.5, -2.0], [-3.0]], [-1.0, -2.0], False, None),
    ],
)
def test_logprobs_a_little_apart_are_rescored_one_sequence_at_a_time(other, truth, same, equita_error):
    rescored = []

    def alone(number):
        rescored.append(number)
        return truth

    result = bench.compare_logprobs([[-1.0, -2.0], [-3.0]], other, alone)
    assert result["same_work"] is same
    if equita_error is None:
        assert rescored == [] and "differ by up to 5.00e-01" in result["why"]
    else:
        assert rescored == [0] and result["recheck"]["requests_beyond_tolerance"] == 1
        assert result["recheck"]["equita_max_error"] == pytest.approx(equita_error, abs=1e-9)
        assert result["recheck"]["peer_max_error"] == pytest.approx(max(abs(o - t) for o, t in zip(other[0], truth)), abs=1e-9)
        assert same or "equita's differ from one-sequence scoring by up to 3.00e-04" in result["why"]


def test_logprobs_of_another_shape_are_different_work():
    assert bench.compare_logprobs([[-1.0, -2.0]], [[-1.0]])["same_work"] is False


def test_first_divergence():
    assert [bench.first_divergence(a, b) for a, b in [([1, 2, 3], [1, 2, 4]), ([1, 2], [1, 2, 3]), ([5], [6]), ([], [])]] == [2, 2, 0, 0]


def test_lm_eval_yaml_for_generation_and_scoring(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    generate = bench.lm_eval_task_yaml("t_gen", prompts, "generate", max_new_tokens=32, stop=("\n\n",))
    assert generate == {
        "task": "t_gen",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(prompts.resolve())}},
        "test_split": "test",
        "doc_to_text": "prompt",
        "output_type": "generate_until",
        "doc_to_target": "reference",
        "generation_kwargs": {"until": ["\n\n"], "max_gen_toks": 32, "do_sample": False},
        "metric_list": [{"metric": "exact_match"}],
    }
    scoring = bench.lm_eval_task_yaml("t_ll", prompts, "loglikelihood")
    assert scoring["output_type"] == "multiple_choice"
    # Continuations carry their own leading space (" uomo"): no delimiter may be added.
    assert (scoring["doc_to_choice"], scoring["target_delimiter"]) == ("continuations", "")


def test_matrix_flops_counts_each_linear_call_by_hand():
    import torch

    from equita.runners.bench.worker import MatrixFlops

    # Two linear layers (4 -> 3 -> 5) on 2 x 6 rows: 2 x 12 x (4 x 3 + 3 x 5) = 648; the
    # activation between them multiplies nothing, and nothing is counted once the block is left.
    layers = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 5))
    with MatrixFlops() as counted:
        layers(torch.zeros(2, 6, 4))
    layers(torch.zeros(2, 6, 4))
    assert counted.flops == 648


def _report(agreement: dict, ratios: dict) -> dict:
    tool = {"median_run_s": 10.0, "median_wall_s": 12.0, "tokens_per_s": 100.0, "matrix_gflop": 375.0, "ceiling_share": 0.25, "peak_rss_mib": 900.0}
    return {
        "model": {"id": "smollm2"},
        "machine": {"processor": "x86_64", "cpus": 2, "torch_threads": 2, "matmul_gflops": 150.0},
        "settings": {"device": "cpu", "dtype": "float32", "batch_size": 16, "repeats": 3},
        "versions": {"equita": "0.1.0", "lm_eval": "0.4.13", "transformers": "5", "torch": "2"},
        "workloads": {
            "jobs": {
                "task": "jobs",
                "kind": "loglikelihood",
                "requests": 1026,
                "limit": None,
                "work_tokens": 56994,
                "tools": {"equita": tool, "lm-eval": tool},
                "agreement": {"equita": {"same_work": True}, "lm-eval": agreement},
                "ratios": {"lm-eval": ratios},
                "targets": {
                    "lm-eval": {"speedup": 3.0, "met": ratios["speedup"] is not None and ratios["speedup"] >= 3},
                    "memory": {"at_most": "lm-eval", "met": True},
                },
            }
        },
    }


def test_markdown_reports_the_ratio_only_on_the_same_work():
    same = bench.markdown(_report({"same_work": True, "max_logprob_diff": 4e-5}, {"speedup": 3.4, "memory_ratio": 0.9}))
    assert "| lm-eval |" in same and "3.40x" in same and "yes (max diff 4.0e-05)" in same
    row = next(line for line in same.splitlines() if line.startswith("| lm-eval "))
    assert [cell.strip() for cell in row.strip("|").split("|")][4:6] == ["375", "25%"]  # GFLOP computed, of ceiling
    assert "against the measured 150 GFLOP/s" in same and "float32 matmul on cpu 150 GFLOP/s" in same
    assert "all 1026 requests" in same and "Targets: lm-eval: met (target 3.0x), memory: met (peak at most lm-eval's)." in same
    withheld = bench.markdown(
        _report({"same_work": False, "why": "log-probabilities differ by up to 3.00e-03 (> 0.0001)"}, {"speedup": None, "memory_ratio": 0.9, "withheld": "log-probabilities differ by up to 3.00e-03 (> 0.0001)"})
    )
    assert "withheld: log-probabilities differ" in withheld and "x |" not in withheld
    assert "Targets: lm-eval: NOT met (target 3.0x), memory" in withheld


def test_markdown_says_how_each_tool_sized_its_batches():
    lines = bench.batching_lines({
        "equita": {"batch_size": 64, "batch_size_trials": {"16": 12.9, "32": 8.7, "64": 6.8, "128": 6.5}, "slot_utilisation": 0.9716},
        "lm-eval": {"batch_size": "auto", "detected_batch_sizes": [64, 32]},
    })  # fmt: skip
    assert lines == [
        "- equita batches: batch 64 (auto; ms per row: 16: 12.9, 32: 8.7, 64: 6.8, 128: 6.5), slot utilisation 97.2%",
        "- lm-eval batches: auto, detected 64, 32",
    ]
    # A suite's equita record is per task.
    suite = bench.batching_lines({"equita": {"jobs": {"batch_size": 32}, "itap-at": {"batch_size": 64, "slot_utilisation": 1.0}}})
    assert suite == ["- equita batches: jobs: batch 32; itap-at: batch 64, slot utilisation 100.0%"]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_ceiling_is_measured_in_the_benchs_dtype(dtype, monkeypatch):
    seen = []
    real = torch.matmul

    def matmul(a, b):
        seen.append((a.dtype, a.device.type, a.shape))
        return real(a, b)

    monkeypatch.setattr(torch.Tensor, "__matmul__", matmul)
    rate = bench.matmul_rate("cpu", dtype, size=32, repeats=2)
    assert rate > 0 and seen == [(getattr(torch, dtype), "cpu", (32, 32))] * 5  # 3 to warm up, 2 timed


RUNS = [{"run_s": 10.0, "wall_s": 12.0, "setup_s": 2.0, "peak_rss_mib": 900.0, "matrix_flops": 3e12},
        {"run_s": 14.0, "wall_s": 16.0, "setup_s": 2.0, "peak_rss_mib": 950.0, "matrix_flops": 3e12}]  # fmt: skip


@pytest.mark.parametrize("gpu_peaks, expected", [(None, None), ([700.0, 650.0], 700.0)])
def test_a_tools_summary_of_its_runs(gpu_peaks, expected):
    runs = [dict(run, **({"peak_gpu_mib": peak} if gpu_peaks else {})) for run, peak in zip(RUNS, gpu_peaks or [None, None])]
    summary = bench._summary(runs, tokens=2400, rate=1e12)
    # Medians of 10 and 14 s; 2,400 tokens in 12 s; 3,000 GFLOP in 12 s against 1,000 GFLOP/s.
    assert (summary["median_run_s"], summary["tokens_per_s"], summary["matrix_gflop"]) == (12.0, 200.0, 3000.0)
    assert summary["ceiling_share"] == pytest.approx(0.25) and summary["peak_rss_mib"] == 950.0
    assert summary["peak_gpu_mib"] == expected  # a GPU's own peak, where the runs were on one


def test_a_gpu_peak_is_printed_beside_the_hosts():
    report = _report({"same_work": True, "max_logprob_diff": 4e-5}, {"speedup": 3.4, "memory_ratio": 0.9})
    report["workloads"]["jobs"]["tools"]["equita"] = {**report["workloads"]["jobs"]["tools"]["equita"], "peak_gpu_mib": 1234.4}
    row = next(line for line in bench.markdown(report).splitlines() if line.startswith("| equita "))
    assert "| 900 (GPU 1234) |" in row


TARGET_TEXTS = [
    # (tool, target, text)
    ("lm-eval", {"speedup": 3.0, "met": True}, "lm-eval: met (target 3.0x)"),
    ("lm-eval", {"speedup": 3.0, "met": False}, "lm-eval: NOT met (target 3.0x)"),
    ("memory", {"at_most": "lm-eval", "met": True}, "memory: met (peak at most lm-eval's)"),
    ("memory", {"at_most": "lm-eval", "met": False}, "memory: NOT met (peak at most lm-eval's)"),
    # At their own best sizes the tools hold different numbers of rows: memory is not judged there.
    ("memory", {"at_most": "lm-eval", "met": None, "batch_sizes": {"equita": 64, "lm-eval": 32}},
     "memory: not judged at different batch sizes (equita 64, lm-eval 32 rows; see the equal-batch series)"),
]  # fmt: skip


@pytest.mark.parametrize("tool, target, text", TARGET_TEXTS)
def test_each_target_reads_as_met_not_met_or_not_judged(tool, target, text):
    assert bench._target_text(tool, target) == text


BATCH_PLANS = [
    # (--batch-size, tools, suite, plan)
    ("sweep", ["equita", "lm-eval", "naive"], False, {"_sweep": True}),
    ("sweep", ["equita", "lm-eval"], True, {"equal": {"equita": 32, "lm-eval": 32}}),  # a whole `equita run`: too long to sweep
    ("auto", ["equita", "lm-eval"], False, {"auto": {"equita": "auto", "lm-eval": "auto"}}),
    (16, ["equita", "lm-eval"], False, {"given": {"equita": 16, "lm-eval": 16}}),
]


@pytest.mark.parametrize("batch_size, tools, suite, plan", BATCH_PLANS)
def test_the_batch_sizes_each_series_times(batch_size, tools, suite, plan):
    assert bench.batch_plan(batch_size, tools, suite) == plan


def test_the_sweep_keeps_each_tools_fastest_fixed_size(tmp_path, monkeypatch):
    # Scripted run times (s for the sweep's requests): equita is fastest at 64, lm-eval at 16.
    times = {("equita", 8): 6.4, ("equita", 16): 4.8, ("equita", 32): 3.2, ("equita", 64): 2.56,
             ("lm-eval", 8): 8.0, ("lm-eval", 16): 6.4, ("lm-eval", 32): 7.0, ("lm-eval", 64): 9.6}  # fmt: skip
    asked = []

    def run_worker(spec, folder):
        asked.append((spec["tool"], spec["batch_size"], spec["requests"], spec["series"]))
        # The second run of equita at 8 is slowed by the machine: the fastest run counts.
        slowed = 10.0 if (spec["tool"], spec["batch_size"], spec["repetition"]) == ("equita", 8, "sweep8-1") else 0.0
        return {"run_s": times[spec["tool"], spec["batch_size"]] + slowed}

    monkeypatch.setattr(bench, "run_worker", run_worker)
    spec_for = lambda tool, repetition, size, series, requests=None: {"tool": tool, "repetition": repetition, "batch_size": size, "series": series, "requests": requests}  # noqa: E731
    found = bench.sweep(["equita", "lm-eval", "naive"], 1026, "generate", spec_for, tmp_path, log=lambda message: None, repeats=2)
    assert {tool: record["chosen"] for tool, record in found.items()} == {"equita": 64, "lm-eval": 16}  # the naive loop has no batch
    assert found["equita"]["ms_per_request"] == {8: 100.0, 16: 75.0, 32: 50.0, 64: 40.0}  # 1000 * s / 64 requests, the faster run
    assert found["equita"]["trials"][8] == [100.0, 256.25]
    assert all(requests == 64 and series == "sweep" for _, _, requests, series in asked) and len(asked) == 16
    # Sizes take turns, so that a slow spell of the machine does not fall on one size's runs alone.
    assert [size for tool, size, _, _ in asked if tool == "equita"] == [8, 16, 32, 64, 8, 16, 32, 64]
    # A workload smaller than a size is not swept at it.
    asked.clear()
    bench.sweep(["equita"], 20, "generate", spec_for, tmp_path, log=lambda message: None)
    assert [size for _, size, _, _ in asked] == [8, 16] and {requests for _, _, requests, _ in asked} == {20}
    # Scoring requests are cheap: a sweep runs on more of them, so that noise does not choose the size.
    asked.clear()
    bench.sweep(["equita"], 1026, "loglikelihood", spec_for, tmp_path, log=lambda message: None)
    assert {requests for _, _, requests, _ in asked} == {256} and [size for _, size, _, _ in asked] == [8, 16, 32, 64]


def test_markdown_shows_the_sweep_and_each_series():
    report = _report({"same_work": True, "max_logprob_diff": 4e-5}, {"speedup": 3.4, "memory_ratio": 0.9})
    jobs = report["workloads"]["jobs"]
    equal = {**{key: jobs[key] for key in ("tools", "agreement", "targets")}, "ratios": {"lm-eval": {"speedup": 1.5, "memory_ratio": 0.9}},
             "batch_sizes": {"equita": 32, "lm-eval": 32}}  # fmt: skip
    jobs["series"] = {"best": {**{key: jobs[key] for key in ("tools", "agreement", "ratios", "targets")}, "batch_sizes": {"equita": 64, "lm-eval": 16}}, "equal": equal}
    jobs["sweep"] = {"equita": {"requests": 64, "ms_per_request": {8: 100.0, 64: 40.0}, "chosen": 64},
                     "lm-eval": {"requests": 64, "ms_per_request": {8: 125.0, 16: 100.0}, "chosen": 16}}  # fmt: skip
    text = bench.markdown(report)
    assert "Batch-size sweep (ms per request on the first 64 requests, one run each): equita: 8: 100.0, 64: 40.0 -> 64; lm-eval: 8: 125.0, 16: 100.0 -> 16." in text
    for found in jobs["sweep"].values():
        found["trials"] = {size: [ms, ms + 1, ms + 2] for size, ms in found["ms_per_request"].items()}
    assert "first 64 requests, fastest of 3 runs each): equita: 8: 100.0" in bench.markdown(report)
    assert "### Each tool at its own best fixed batch size: equita 64, lm-eval 16" in text and "3.40x" in text
    assert "### Both at the same batch size: equita 32, lm-eval 32" in text and "1.50x" in text


def test_bad_requests_fail_before_any_model_loads(tmp_path, monkeypatch):
    with pytest.raises(bench.BenchError, match="unknown workload nope; valid: itap-at, jobs, gfg, suite"):
        bench.bench(bench.BenchOptions(out=tmp_path, workloads=("nope",)))
    with pytest.raises(bench.BenchError, match="tools must include equita"):
        bench.bench(bench.BenchOptions(out=tmp_path, tools=("lm-eval", "naive")))
    # A limit that would be ignored: a misspelt workload, or one that is not run.
    with pytest.raises(bench.BenchError, match="--limit nope: unknown workload; valid: itap-at, jobs, gfg, suite"):
        bench.bench(bench.BenchOptions(out=tmp_path, limits={"nope": 5}))
    with pytest.raises(bench.BenchError, match=r"--limit suite: not among the workloads run \(itap-at, jobs, gfg\)"):
        bench.bench(bench.BenchOptions(out=tmp_path, limits={"suite": 5}))

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(bench.metadata, "version", not_installed)
    with pytest.raises(bench.BenchError, match=r"lm-eval is not installed; run: pip install 'equita\[bench\]'"):
        bench.bench(bench.BenchOptions(out=tmp_path, tools=("equita", "lm-eval")))


def _equita(*args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "EQUITA_SOURCE_DIR"}
    return subprocess.run([*EQUITA, *args], capture_output=True, text=True, env=environment, timeout=900)


def test_bad_limit_is_refused():
    result = _equita("bench", "--limit", "jobs=0")
    assert result.returncode == 2 and "--limit jobs=0: use WORKLOAD=N" in result.stderr


def test_bench_end_to_end_on_the_embedded_model(tmp_path, smollm2, itap_dir, monkeypatch):
    """The suite workload (the whole `equita run --tasks bias`, one row of each) with its tools, on
    the real SmolLM2 and lm-eval; then the naive tool on the suite's ItaP-AT prompts, in this
    process. Two repetitions: the first runs every tool for real; the second replays each tool's
    first run, slower, so that the alternation and the medians are checked without paying for the
    same runs twice. (A single-task workload differs only in preparing one folder, checked by the
    unit tests above; lm-eval on every task against `equita run` is tests/test_lm_eval.py.)"""
    from equita.runners.backends.sources import convert_gguf, embedded_gguf
    from equita.runners.bench import worker

    datasets = tmp_path / "datasets"
    datasets.mkdir()
    (datasets / "itap_at").symlink_to(itap_dir)
    get_task("jobs").build_to(datasets / "jobs", source_dir=None, force=False)
    out = tmp_path / "bench"
    real_run, first, order = bench.run_worker, {}, []

    def run_worker(spec, folder):
        order.append((spec["workload_name"], spec["repetition"], spec["tool"]))
        if spec["repetition"] == 0:
            first[spec["workload_name"], spec["tool"]] = real_run(spec, folder)
            return first[spec["workload_name"], spec["tool"]]
        replay = json.loads(json.dumps(first[spec["workload_name"], spec["tool"]]))
        replay.update(run_s=3 * replay["run_s"], wall_s=3 * replay["wall_s"], setup_s=3 * replay["setup_s"])
        return replay

    monkeypatch.setattr(bench, "run_worker", run_worker)
    done = CliRunner().invoke(app, [
        "bench", "--workloads", "suite", "--limit", "suite=1", "--repeats", "2", "--batch-size", "4", "--datasets", str(datasets), "--out", str(out),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output[-3000:]
    # Tools alternate who goes first from one repetition to the next.
    assert order == [("suite", 0, "equita"), ("suite", 0, "lm-eval"), ("suite", 1, "lm-eval"), ("suite", 1, "equita")]
    report = json.loads((out / "bench.json").read_text())
    assert report["schema"] == "equita.bench/1" and report["settings"]["batch_size"] == 4
    suite = report["workloads"]["suite"]
    jobs = suite["parts"]["jobs"]
    assert (suite["kind"], jobs["requests"], jobs["kind"]) == ("suite", 9, "loglikelihood")
    # The suite is `equita run --tasks bias --limit 1`: one row of each ItaP-AT task, one profession's 6 sentences
    # and the 3 neutral sentences every limit keeps.
    assert {name: part["requests"] for name, part in suite["parts"].items()} == {"itap-at": 1, "itap-at-oneshot": 1, "itap-at-logprob": 1, "jobs": 9}
    assert suite["requests"] == 12 and suite["work_tokens"] == sum(part["work_tokens"] for part in suite["parts"].values())
    # Jobs: 9 sentences x 4 words, each word scored with its sentence: the work lm-eval does.
    assert jobs["scored_tokens"] > 4 * jobs["prompt_tokens"]
    # Same work, checked before any ratio, task by task: the same prompt texts, greedy answers, log-probabilities.
    assert suite["agreement"]["lm-eval"]["same_work"] and set(suite["agreement_by_task"]) == set(suite["parts"])
    assert suite["agreement_by_task"]["jobs"]["lm-eval"]["max_logprob_diff"] <= bench.LOGPROB_TOLERANCE
    assert suite["agreement"]["lm-eval"]["identical"] == 2  # the two generation tasks' answers
    # What each tool used: the run's own timings for the suite.
    assert suite["batching"]["equita"]["jobs"]["batch_size"] == 4 and suite["batching"]["lm-eval"]["batch_size"] == 4
    assert 0 < suite["batching"]["equita"]["itap-at"]["slot_utilisation"] <= 1
    assert set(suite["tools"]) == {"equita", "lm-eval"}
    for tool, summary in suite["tools"].items():
        assert summary["runs"] == 2 and summary["median_run_s"] > 0 and summary["peak_rss_mib"] > 100
        # The median of a run and its replay at three times the time: twice the first.
        assert summary["median_run_s"] == pytest.approx(2 * first["suite", tool]["run_s"])
    assert all(ratio["speedup"] is not None for ratio in suite["ratios"].values())
    # The lm-eval task the benchmark wrote reads the very prompts equita renders.
    part = out / "work" / "suite" / "itap-at"
    prompts = [json.loads(line)["prompt"] for line in (part / "prompts.jsonl").read_text().splitlines()]
    assert prompts[0].startswith("<|im_start|>system\n") and prompts[0].endswith("<|im_start|>assistant\n")
    assert (part / "lm_eval" / "equita_bench_itap_at.yaml").is_file()
    markdown = (out / "bench.md").read_text()
    assert "## suite (bias, suite, subset of 12 (--limit 1) requests)" in markdown and "- equita batches: itap-at: batch 4" in markdown
    assert markdown.strip() in done.output
    # The naive tool (P-AT's one-prompt-at-a-time loop) on the same prompt gives lm-eval's greedy answer.
    naive = worker.run_naive({"model": str(convert_gguf(embedded_gguf("smollm2"))), "dtype": "float32", "device": "cpu", "workload": str(part)})
    assert naive["prompts"] == prompts and naive["answers"] == first["suite", "lm-eval"]["answers"]["itap-at"]
