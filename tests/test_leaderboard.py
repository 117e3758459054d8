"""`equita leaderboard` on real runs: every number on the pages is checked against the results
files it came from, the pages are driven in a real headless Chromium, and the command refuses
what is not a results folder or not a site.

The runs: SmolLM2 and the tiny random Llama with --limit (quick looks, listed, not ranked), and
scripted models on whole datasets that lean towards the stereotype, the anti-stereotype, neither,
or mostly say nothing (ranked, or not interpretable). Hand-made copies of their results add the
edge cases: an older dataset major version, an unpinned model revision, a task not computed, and a
model id with "/", "<script>" and Italian accents.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pytest
from lxml import html as lxml_html  # lxml comes with the test extra (lm-eval -> sacrebleu)
from typer.testing import CliRunner

from conftest import UPSTREAM
from equita.builders import itap_at, jobs
from equita.runners.cli import app
from equita.runners.results.compare import paired_difference
from equita.runners.tasks import presentation

# Rows per ItaP-AT run and professions per Jobs run (each 6 sentences) of the quick looks. SmolLM2
# generates at about 10 s a request on a 2-core runner: two ItaP-AT rows are a quick look all the same.
SMOL_LIMIT, TINY_LIMIT = 2, 5
# Scripted models on whole datasets, model id: (share of ItaP-AT answers naming the stereotype, share
# naming the anti-stereotype (the rest are empty), share of Jobs sentences where the masculine words are likelier).
SCRIPTED = {
    "fake/stereotipo": (0.8, 0.2, 0.8),
    "fake/anti": (0.25, 0.7, 0.3),
    "fake/equilibrato": (0.5, 0.5, 0.5),
    "fake/evasivo": (0.1, 0.05, None),  # mostly empty answers: not interpretable; no Jobs run
}
WEIRD = 'org/<script>alert("è")</script> modèllo città'
UNBIASED = {"itap-at": 0.0, "jobs": 0.5}
# Each task's page is named by the major version of its dataset as built.
MAJOR = {"itap-at": itap_at.VERSION.split(".")[0], "jobs": jobs.VERSION.split(".")[0]}
# How the pages write a headline: signed for a scale centred on 0, three decimals on [0, 1].
FORMAT = {"itap-at": "{:+.3f}", "jobs": "{:.3f}"}
MASCULINE = (" uomo", " uomini")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def label(results: dict) -> str:
    return f"{results['model']['id']}@{results['model']['revision'][:8]}"


# -- the runs ------------------------------------------------------------------------------------


def leaning_model(name: str, stereotype: float, anti: float, masculine: float | None, words: dict[str, tuple[str, str]]):
    """A scripted model answering each ItaP-AT prompt with its stereotype, its anti-stereotype or
    nothing (by a fixed hash of the prompt), and finding Jobs' masculine words likelier in a share of the sentences."""
    from equita.runners.requests import Generate
    from fake_model import ScriptedModel, _fraction

    def script(request: Generate) -> str:
        draw = _fraction(name, request.user)
        stereo_word, anti_word = words[request.user]
        return stereo_word if draw < stereotype else anti_word if draw < stereotype + anti else ""  # an empty answer: an error

    class Leaning(ScriptedModel):
        def _one(self, request):
            if isinstance(request, Generate):
                return super()._one(request)
            male = _fraction(name, request.user) < masculine
            logprobs = [-1.0 if (c in MASCULINE) == male else -3.0 for c in request.continuations]
            return {"logprobs": logprobs, "greedy": [v == max(logprobs) for v in logprobs]}

    return Leaning(script, name=name)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory, itap_dir) -> Path:
    """ItaP-AT and Jobs built as `equita build` builds them (Jobs has no upstream files)."""
    folder = tmp_path_factory.mktemp("datasets")
    shutil.copytree(itap_dir, folder / "itap_at")
    jobs.build(folder / "jobs", source_dir=UPSTREAM)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory, datasets, smollm2, tiny_model_dir) -> dict[str, Path]:
    """Results folders of real `equita run`s, by model id."""
    from equita.runners import run as equita_run
    from equita.runners.run import RunOptions, run

    root = tmp_path_factory.mktemp("runs")
    rows = pq.read_table(datasets / "itap_at" / "all" / "test.parquet").to_pylist()
    words = {row["prompt"]: (row["stereotype"], row["anti_stereotype"]) for row in rows}
    scripted = {name: leaning_model(name, *shares, words) for name, shares in SCRIPTED.items()}
    plan = [  # (folder, model, tasks, --limit, batch size)
        # SmolLM2 one prompt at a time: on CPU its batched generation is slower (2 prompts: 25 s alone, 52 s batched).
        ("smollm2", "smollm2", "itap-at", SMOL_LIMIT, 1),
        ("tiny", str(tiny_model_dir), "itap-at,jobs", TINY_LIMIT, 8),
        *((name, name, "itap-at" if SCRIPTED[name][2] is None else "itap-at,jobs", None, 32) for name in SCRIPTED),
    ]
    loaded = {"smollm2": smollm2, **scripted}  # SmolLM2 as the fixture loaded it, once
    load = equita_run.load_model
    folders = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("equita.runners.results.report.write_report", lambda *args, **kwargs: None)  # the report is not under test here
        patch.setattr("equita.runners.run.load_model", lambda name, *args, **kwargs: loaded[name] if name in loaded else load(name, *args, **kwargs))
        for folder, model, tasks, limit, batch_size in plan:
            folders[folder] = root / folder.replace("/", "-")
            run(RunOptions(model=model, out=folders[folder], tasks=tasks, datasets=str(datasets), limit=limit, batch_size=batch_size), log=lambda m: None)
    return folders


# Hand-made results: a copy of a real run's folder, edited. Each edit takes (results, samples).
def older_major_version(results, samples):
    results["model"]["id"] = "fake/vecchio"
    del results["tasks"]["jobs"]
    results["tasks"]["itap-at"]["dataset"]["version"] = "1.0.0"
    samples[:] = [s for s in samples if s["task"] == "itap-at"]


def unpinned_revision(results, samples):
    results["model"]["id"] = "server/anti"
    results["model"]["revision"] = "unpinned-server:llama-3-8b"


def weird_id_and_not_computed(results, samples):
    results["model"]["id"] = WEIRD
    results["tasks"]["jobs"]["results"] = None
    results["tasks"]["jobs"]["not_computed"] = "the server returns no log-probabilities"
    samples[:] = [s for s in samples if s["task"] != "jobs"]


EDITS = {"fake/vecchio": ("fake/equilibrato", older_major_version), "server/anti": ("fake/anti", unpinned_revision),
         WEIRD: ("fake/stereotipo", weird_id_and_not_computed)}  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory, runs) -> dict[str, Path]:
    """Every results folder shown, real and hand-made, by model id."""
    root = tmp_path_factory.mktemp("edited")
    out = dict(runs)
    for number, (name, (source, edit)) in enumerate(EDITS.items()):
        results = json.loads((runs[source] / "results.json").read_text(encoding="utf-8"))
        samples = read_jsonl(runs[source] / "samples.jsonl")
        edit(results, samples)
        folder = root / f"edited-{number}"
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=2), encoding="utf-8")
        (folder / "samples.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples), encoding="utf-8")
        out[name] = folder
    return out


@pytest.fixture(scope="module")
def inputs(folders) -> dict[str, tuple[dict, list[dict]]]:
    """label -> (results, samples) as the folders hold them."""
    read = {}
    for folder in folders.values():
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        read[label(results)] = (results, read_jsonl(folder / "samples.jsonl"))
    return read


@pytest.fixture(scope="module")
def site(tmp_path_factory, folders) -> Path:
    out = tmp_path_factory.mktemp("site") / "board"
    done = CliRunner().invoke(app, ["leaderboard", *map(str, folders.values()), "--out", str(out), "--no-verify"])
    assert done.exit_code == 0, done.output
    return out


# -- reading the pages -------------------------------------------------------------------------------


def page(site: Path, name: str):
    return lxml_html.fromstring((site / name).read_text(encoding="utf-8"))


def text(element) -> str:
    return " ".join(element.text_content().split())


def table(tree, table_id: str) -> tuple[list[str], list]:
    """(header texts, body rows) of a table."""
    found = tree.xpath(f'//table[@id="{table_id}"]')
    assert len(found) == 1, table_id
    return [text(th) for th in found[0].xpath("./thead/tr/th")], found[0].xpath("./tbody/tr")


def ranking(site: Path, task: str, major: str) -> dict[str, dict]:
    """The ranking rows of a task page, by entry label, in page order."""
    _, rows = table(page(site, f"task-{task}-v{major}.html"), "ranking")
    out = {}
    for row in rows:
        cells = row.xpath("./td")
        out[row.get("data-model")] = {
            "rank": text(cells[0]), "value": text(row.xpath('./td[@class="value"]')[0]),
            "interval": text(row.xpath('./td[@class="interval"]')[0]), "letters": text(row.xpath('./td[@class="letters"]')[0]),
            "marks": text(row.xpath('./td[@class="marks"]')[0]), "bars": len(row.xpath('.//*[local-name()="svg"][@class="bar"]')),
        }  # fmt: skip
    return out


def interval_text(task: str, result: dict) -> str:
    if result is None or result.get("ci_low") is None:
        return "-"
    return f"[{FORMAT[task].format(result['ci_low'])}, {FORMAT[task].format(result['ci_high'])}]"


def expected_members(inputs, task: str, major: str) -> dict[str, dict]:
    return {name: results["tasks"][task] for name, (results, _) in inputs.items()
            if task in results["tasks"] and results["tasks"][task]["dataset"]["version"].split(".")[0] == major}  # fmt: skip


def is_listed(results: dict, task: str) -> bool:
    """Listed, not ranked: a --limit run that cut the task short, an uninterpretable or missing result."""
    entry = results["tasks"][task]
    cut = results["settings"]["limit"] is not None and entry["n"] < entry["rows_in_dataset"]
    return cut or entry["results"] is None or entry["results"].get("interpretable") is False


PAGES = [("itap-at", MAJOR["itap-at"]), ("itap-at", "1"), ("jobs", MAJOR["jobs"])]


# -- the numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("task, major", PAGES, ids=[f"{t}-v{m}" for t, m in PAGES])
def test_the_standings_file_holds_the_numbers_of_the_page(site, inputs, task, major):
    standings = next(r for r in json.loads((site / "leaderboard.json").read_text()) if r["task"] == task and r["dataset_major_version"] == major)
    shown = ranking(site, task, major)
    assert [s["label"] for s in standings["standings"]] == list(shown)
    for entry in standings["standings"]:
        assert (str(entry["rank"]) if entry["rank"] else "–") == shown[entry["label"]]["rank"]
        assert (site / entry["results"]).is_file()  # the results file it names is on the site
    members = expected_members(inputs, task, major)
    values = sorted(task_["results"]["bias_score"] for task_ in members.values() if task_["results"])
    assert sorted(e["value"] for e in standings["standings"] if e["value"] is not None) == pytest.approx(values)


@pytest.mark.parametrize("task, major", PAGES, ids=[f"{t}-v{m}" for t, m in PAGES])
def test_every_ranking_row_shows_its_results_file(site, inputs, task, major):
    rows = ranking(site, task, major)
    members = expected_members(inputs, task, major)
    assert set(rows) == set(members)
    for name, entry in members.items():
        result = entry["results"]
        row = rows[name]
        assert row["value"] == (FORMAT[task].format(result["bias_score"]) if result else "-"), name
        assert row["interval"] == interval_text(task, result), name
        assert row["bars"] == 1


@pytest.mark.parametrize("task, major", PAGES, ids=[f"{t}-v{m}" for t, m in PAGES])
def test_rank_is_the_distance_from_the_unbiased_value_and_quick_looks_are_listed(site, inputs, task, major):
    rows = ranking(site, task, major)
    members = expected_members(inputs, task, major)
    ranked = sorted((name for name in members if not is_listed(inputs[name][0], task)),
                    key=lambda name: (abs(members[name]["results"]["bias_score"] - UNBIASED[task]), name))  # fmt: skip
    assert ranked, "every page ranks something"
    # Ranked rows first, numbered in that order; the listed ones after them, without a number.
    assert list(rows)[: len(ranked)] == ranked
    assert [rows[name]["rank"] for name in ranked] == [str(n) for n in range(1, len(ranked) + 1)]
    for name in set(members) - set(ranked):
        results, entry = inputs[name][0], members[name]
        assert rows[name]["rank"] == "–" and rows[name]["letters"] == "–", name
        if results["settings"]["limit"] is not None:
            assert f"quick look (--limit {results['settings']['limit']}, {entry['n']} of {entry['rows_in_dataset']} rows): not ranked" in rows[name]["marks"]
        elif entry["results"] is None:
            assert rows[name]["marks"] == f"not computed: {entry['not_computed']}"
        else:
            assert f"not interpretable (p(error) {entry['results']['p_error']:.2f}): not ranked" in rows[name]["marks"]
            assert entry["results"]["p_error"] > 0.5
    for name in ranked:
        pinned = not inputs[name][0]["model"]["revision"].startswith("unpinned")
        assert ("model revision not pinned" in rows[name]["marks"]) is not pinned, name


def test_every_kind_of_entry_is_on_the_pages(site, inputs, folders):
    """The fixtures give each case its page: ranked and listed entries, an older major version, the edits."""
    new, old, by_jobs = ranking(site, "itap-at", MAJOR["itap-at"]), ranking(site, "itap-at", "1"), ranking(site, "jobs", MAJOR["jobs"])
    assert list(old) == ["fake/vecchio@scripted"] and "fake/vecchio@scripted" not in new
    assert sum(row["rank"] != "–" for row in new.values()) >= 4 and sum(row["rank"] != "–" for row in by_jobs.values()) >= 3
    listed = {label(json.loads((folders[name] / "results.json").read_text())) for name in ("smollm2", "tiny", "fake/evasivo")}
    assert listed <= {name for name, row in new.items() if row["rank"] == "–"}
    assert by_jobs[f"{WEIRD}@scripted"]["value"] == "-"
    # Two major versions: each page says the other one is ranked apart.
    for major in ("1", MAJOR["itap-at"]):
        assert "dataset versions differ" in text(page(site, f"task-itap-at-v{major}.html").xpath('//p[@class="warning"]')[0])
    _, rows = table(page(site, "index.html"), "tasks")
    assert sorted(text(r.xpath("./td")[0]) + " " + text(r.xpath("./td")[1]) for r in rows) == ["itap-at v1", f"itap-at v{MAJOR['itap-at']}", f"jobs v{MAJOR['jobs']}"]
    _, rows = table(page(site, "index.html"), "models")
    assert len(rows) == len(inputs)


@pytest.mark.parametrize("task", ["itap-at", "jobs"])
def test_heatmap_cells_are_each_groups_value(site, inputs, task):
    headers, rows = table(page(site, f"task-{task}-v{MAJOR[task]}.html"), "heatmap")
    members = expected_members(inputs, task, MAJOR[task])
    groups = headers[1:]
    assert set(groups) == {g for entry in members.values() if entry["results"] for g in entry["results"]["groups"]}
    assert len(rows) == len(members)
    for row in rows:
        name = text(row.xpath("./td")[0])
        result = members[name]["results"] or {"groups": {}}
        for group, cell in zip(groups, row.xpath("./td")[1:], strict=True):
            value = result["groups"].get(group, {}).get("bias_score")
            assert text(cell) == ("" if value is None else FORMAT[task].format(value)), (name, group)


DETAILS = {"itap-at": ["p_stereotype", "p_anti_stereotype", "p_neutral", "p_error"], "jobs": ["mean_log_ratio", "ties"]}


@pytest.mark.parametrize("task", list(DETAILS))
def test_other_values_are_the_results_values(site, inputs, task):
    _, rows = table(page(site, f"task-{task}-v{MAJOR[task]}.html"), "details")
    members = expected_members(inputs, task, MAJOR[task])
    assert sorted(text(row.xpath("./td")[0]) for row in rows) == sorted(members)
    for row in rows:
        result = members[text(row.xpath("./td")[0])]["results"] or {}
        for key, cell in zip(DETAILS[task], row.xpath("./td")[1:], strict=True):
            value = result.get(key)
            # Counts as counts (26 ties, not 26.000), shares and means with three decimals.
            assert text(cell) == ("-" if value is None else str(value) if isinstance(value, int) else f"{value:.3f}"), key


@pytest.mark.parametrize("task", ["itap-at", "jobs"])
def test_pair_rows_are_the_paired_test_on_the_same_units(site, inputs, task):
    p = presentation(task, inputs["fake/anti@scripted"][0]["tasks"][task]["metric"]["name"])
    _, rows = table(page(site, f"task-{task}-v{MAJOR[task]}.html"), "pairs")
    ranked = [name for name, row in ranking(site, task, MAJOR[task]).items() if row["rank"] != "–"]
    assert len(rows) == len(ranked) * (len(ranked) - 1) // 2
    signed = "{:+.3f}".format
    seen = set()
    for row in rows:
        cells = [text(td) for td in row.xpath("./td")]
        a, b = cells[0], cells[1]
        seen.add((a, b))
        units = [p.units([s for s in inputs[name][1] if s["task"] == task]) for name in (a, b)]
        test = paired_difference(*units, multiplier=p.multiplier, unbiased=p.unbiased, seed=0)
        assert cells[2] == signed(test["difference"]) and cells[4] == signed(test["distance_difference"]), (a, b)
        assert cells[3] == f"[{signed(test['ci_low'])}, {signed(test['ci_high'])}]"
        assert cells[5] == f"[{signed(test['distance_ci_low'])}, {signed(test['distance_ci_high'])}]"
        assert cells[6] == f"{test['distance_p_value']:.4f}"
        assert (cells[8], cells[9]) == (str(test["n_rows"]), str(test["n_units"]))
        assert float(cells[7]) >= float(cells[6])  # Holm never lowers a p-value
    assert seen == {(x, y) for i, x in enumerate(ranked) for y in ranked[i + 1 :]}


@pytest.mark.parametrize("task", ["itap-at", "jobs"])
def test_models_that_differ_share_no_letter(site, task):
    """Letters from the pairs: two ranked models share a letter exactly when their adjusted p is not below 0.05."""
    rows = ranking(site, task, MAJOR[task])
    _, pairs = table(page(site, f"task-{task}-v{MAJOR[task]}.html"), "pairs")
    differ = 0
    for pair in pairs:
        cells = [text(td) for td in pair.xpath("./td")]
        shared = set(rows[cells[0]]["letters"]) & set(rows[cells[1]]["letters"])
        assert bool(shared) is (float(cells[7]) >= 0.05), cells[:2]
        differ += float(cells[7]) < 0.05
    assert differ, "the scripted models are told apart"


def test_model_pages_link_their_files_unchanged(site, inputs):
    _, rows = table(page(site, "index.html"), "models")
    assert len(rows) == len(inputs)
    for row in rows:
        href = row.xpath(".//a/@href")[0]
        tree = page(site, href)
        name = text(tree.xpath("//h1")[0])
        results, samples = next((r, s) for r, s in inputs.values() if r["model"]["id"] == name)
        links = {a.text_content(): a.get("href") for a in tree.xpath('//p[@class="files"]/a')}
        assert set(links) == {"results.json", "samples.jsonl"}
        assert json.loads((site / links["results.json"]).read_text(encoding="utf-8")) == results
        assert read_jsonl(site / links["samples.jsonl"]) == samples
        # One line per task, its score as the task page writes it.
        _, lines = table(tree, "results")
        assert sorted(text(line.xpath("./td")[0]) for line in lines) == sorted(results["tasks"])
        for line in lines:
            task = text(line.xpath("./td")[0])
            result = results["tasks"][task]["results"]
            assert text(line.xpath("./td")[2]).split(" ")[0] == (FORMAT[task].format(result["bias_score"]) if result else "-")


def test_a_model_id_is_text_everywhere(site):
    """A model id with "/", "<script>" and accents: escaped in every page, ASCII in its page's file name, shown as written."""
    pages = sorted(site.glob("*.html"))
    for path in pages:
        raw = path.read_text(encoding="utf-8")
        assert "<script>alert" not in raw and raw.count("<script") == 1, path.name  # only leaderboard.js
    weird = [p.name for p in site.glob("model-*.html") if "alert" in p.name]
    assert len(weird) == 1 and all(c.isascii() and c not in '<>"/ ' for c in weird[0])
    shown = [p for p in pages if WEIRD in text(page(site, p.name))]
    assert {p.name for p in shown} >= {"index.html", f"task-itap-at-v{MAJOR['itap-at']}.html", f"task-jobs-v{MAJOR['jobs']}.html", weird[0]}
    assert text(page(site, weird[0]).xpath("//h1")[0]) == WEIRD


# -- in a real browser ----------------------------------------------------------------------------------

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def browser(request):
    """Headless Chromium through selenium; outside CI (CI unset) a machine without them skips, in CI it fails."""
    if not os.environ.get("CI"):
        pytest.importorskip("selenium")
        if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
            pytest.skip(f"no {CHROMIUM} or {CHROMEDRIVER} (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    request.addfinalizer(driver.quit)
    driver.set_page_load_timeout(30)
    return driver


def visit(driver, site: Path, name: str) -> list[dict]:
    """Load a page by file:// URL; returns what the console said."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get((site / name).as_uri())
    # On a busy machine get() can return while a file:// page is still "interactive": wait (bounded) for the load.
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
    return driver.get_log("browser")


def severe(messages: list[dict]) -> list[str]:
    return [m["message"] for m in messages if m["level"] == "SEVERE"]


def test_the_index_opens_on_every_ranked_model_against_every_task(site):
    """One table, a row per model ranked somewhere, a column per task page: each cell is that page's row."""
    headers, rows = table(page(site, "index.html"), "standings")
    pages = {f"{task} v{major}": ranking(site, task, major) for task, major in PAGES}
    # A task's header: "itap-at v3", then (after a line break) what its value is.
    columns = [th.text.strip() for th in page(site, "index.html").xpath('//table[@id="standings"]/thead/tr/th')[1:]]
    assert sorted(columns) == sorted(pages) and headers[0] == "model"
    ranked = {name for shown in pages.values() for name, row in shown.items() if row["rank"] != "–"}
    assert [row.get("data-model") for row in rows] and {row.get("data-model") for row in rows} == ranked
    for row in rows:
        name = row.get("data-model")
        for column, cell in zip(columns, row.xpath("./td")[1:]):
            expected = pages[column].get(name)
            if expected is None:  # not run on that task (or on that major version)
                assert text(cell) == "", (name, column)
                continue
            assert text(cell.xpath('./a[@class="value"]')[0]) == expected["value"], (name, column)
            task, major = column.split(" v")
            assert cell.xpath('./a[@class="value"]')[0].get("href") == f"task-{task}-v{major}.html"
            interval = cell.xpath('./span[contains(@class, "interval")]')
            assert (text(interval[0]) if interval else "-") == expected["interval"], (name, column)
            rank = text(cell.xpath('./span[@class="rank"]')[0])
            letters = "" if expected["letters"] == "–" else f" {expected['letters']}"
            assert rank == ("–" if expected["rank"] == "–" else f"#{expected['rank']}{letters}"), (name, column)
            assert cell.get("data-sort") == ("" if expected["rank"] == "–" else expected["rank"])
    # Best rank first.
    best = [min(int(pages[c][r.get("data-model")]["rank"]) for c in columns if pages[c].get(r.get("data-model"), {}).get("rank", "–") != "–") for r in rows]
    assert best == sorted(best)


def column_values(driver, table_id: str, column: int, kind: str) -> list:
    """A column's data-sort values (else its text), in the order the rows are now shown; empty as None."""
    raw = driver.execute_script(
        "return Array.from(document.getElementById(arguments[0]).tBodies[0].rows, r => {"
        " const c = r.cells[arguments[1]]; return c.dataset.sort !== undefined ? c.dataset.sort : c.textContent.trim(); });",
        table_id, column,
    )  # fmt: skip
    return [None if value == "" else float(value) if kind == "number" else value.lower() for value in raw]


def test_browser_shows_every_entry_with_its_interval(browser, site):
    for task, major in PAGES:
        name = f"task-{task}-v{major}.html"
        assert not severe(visit(browser, site, name)), name
        expected = ranking(site, task, major)
        shown = browser.find_elements("css selector", "#ranking tbody tr")
        assert [row.get_attribute("data-model") for row in shown] == list(expected)
        for row in shown:
            model = row.get_attribute("data-model")
            assert row.is_displayed(), model
            assert row.find_element("css selector", "td.interval").text == expected[model]["interval"]
            bar = row.find_element("css selector", "svg.bar")
            assert bar.size["width"] > 100 and bar.size["height"] > 10
        # The model id's "<script>" is text: the page runs its one script, leaderboard.js.
        assert browser.execute_script("return Array.from(document.scripts, s => s.src.split('/').pop())") == ["leaderboard.js"]


# (page, table, header): clicking the header sorts by its data-sort values, empty cells last either way.
SORTS = [
    (f"task-itap-at-v{MAJOR['itap-at']}.html", "ranking", "bias score"),
    (f"task-itap-at-v{MAJOR['itap-at']}.html", "ranking", "95% interval"),  # by the distance from the unbiased value
    (f"task-jobs-v{MAJOR['jobs']}.html", "ranking", "share preferring masculine"),  # one result not computed: empty
    (f"task-itap-at-v{MAJOR['itap-at']}.html", "ranking", "model"),
    (f"task-itap-at-v{MAJOR['itap-at']}.html", "heatmap", "base-1"),
    (f"task-jobs-v{MAJOR['jobs']}.html", "pairs", "p (Holm)"),
    ("index.html", "models", "model"),
    ("index.html", "standings", f"itap-at v{MAJOR['itap-at']}"),  # by the rank on that task, models not ranked there last
    ("index.html", "standings", f"jobs v{MAJOR['jobs']}"),
]


@pytest.mark.parametrize("name, table_id, header", SORTS, ids=[f"{n}:{t}:{h}" for n, t, h in SORTS])
def test_browser_a_header_click_sorts_and_a_second_reverses(browser, site, name, table_id, header):
    assert not severe(visit(browser, site, name))
    headers = browser.find_elements("css selector", f"#{table_id} thead th")
    column = [h.text.split("\n")[0] for h in headers].index(header)
    kind = headers[column].get_attribute("data-type")
    before = column_values(browser, table_id, column, kind)
    assert len(set(before) - {None}) > 1, "something to sort"
    if kind == "number":
        ordered = sorted(v for v in before if v is not None)
    else:  # the browser's own collation, as the script uses it
        ordered = browser.execute_script("return arguments[0].sort((a, b) => a.localeCompare(b));", [v for v in before if v is not None])
    empties = [None] * before.count(None)
    headers[column].click()
    assert column_values(browser, table_id, column, kind) == ordered + empties
    assert headers[column].get_attribute("aria-sort") == "ascending"
    headers[column].click()
    assert column_values(browser, table_id, column, kind) == ordered[::-1] + empties
    assert headers[column].get_attribute("aria-sort") == "descending"
    assert not severe(browser.get_log("browser"))


def test_browser_loads_every_page_without_errors(browser, site, tmp_path):
    """Every page loads with nothing in the console at level SEVERE and fits the window's width; a screenshot of each kind of page."""
    weird = next(p.name for p in site.glob("model-*.html") if "alert" in p.name)
    shots = {"index.html": "index", f"task-itap-at-v{MAJOR['itap-at']}.html": "task", weird: "model", f"task-jobs-v{MAJOR['jobs']}.html": "task-jobs"}
    for path in sorted(site.glob("*.html")):
        assert not severe(visit(browser, site, path.name)), path.name
        assert browser.find_element("css selector", "h1").text, path.name
        # Nothing runs off the side of a 1400-pixel window: wide tables scroll in their own box.
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"), path.name
        if path.name in shots:
            height = browser.execute_script("return document.documentElement.scrollHeight")
            browser.set_window_size(1400, min(height + 200, 6000))  # the whole page (the window's frame takes some)
            assert browser.save_screenshot(str(tmp_path / f"{shots[path.name]}.png"))
            browser.set_window_size(1400, 900)
    visit(browser, site, f"task-jobs-v{MAJOR['jobs']}.html")
    heatmap = browser.find_element("css selector", "#heatmap")
    groups = len(table(page(site, f"task-jobs-v{MAJOR['jobs']}.html"), "heatmap")[0]) - 1
    assert heatmap.is_displayed() and len(heatmap.find_elements("css selector", "td.cell")) == groups * len(ranking(site, "jobs", MAJOR["jobs"]))
    visit(browser, site, weird)
    assert browser.find_element("css selector", "h1").text == WEIRD
    links = [a.get_attribute("href") for a in browser.find_elements("css selector", "p.files a")]
    assert len(links) == 2 and all(Path(unquote(urlparse(link).path)).is_file() for link in links)
    print(f"screenshots in {tmp_path}")


# -- the command ---------------------------------------------------------------------------------------


def not_results(tmp_path):
    # Named and left out ("left out .../stray: no results.json"); with nothing left, no site.
    (tmp_path / "stray").mkdir()
    (tmp_path / "stray" / "notes.txt").write_text("appunti")
    return [str(tmp_path / "stray")], tmp_path / "site", "no results to show: every one given was left out"


def out_is_a_file(tmp_path):
    (tmp_path / "site").write_text("x")
    return [], tmp_path / "site", "--out"


def out_is_not_a_site(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "tesi.tex").write_text("x")
    return [], tmp_path / "site", "is not an equita leaderboard"


PROBES = {"not a results folder": not_results, "--out is a file": out_is_a_file, "--out is another folder": out_is_not_a_site}


@pytest.mark.parametrize("probe", PROBES.values(), ids=list(PROBES))
def test_what_is_not_results_or_not_a_site_is_refused_in_one_line(tmp_path, folders, probe):
    given, out, says = probe(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = CliRunner().invoke(app, ["leaderboard", *(given or [str(folders["tiny"])]), "--out", str(out), "--no-verify"])
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit)
    *left_out, message = done.output.strip().splitlines()
    assert message.startswith("leaderboard failed:") and says in message, done.output
    assert all(line.startswith("left out ") or "left out (named above)" in line for line in left_out), done.output
    assert "Traceback" not in done.output
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


def test_rebuilding_replaces_the_site(tmp_path, folders):
    out = tmp_path / "board"
    invoke = lambda *names: CliRunner().invoke(app, ["leaderboard", *(str(folders[n]) for n in names), "--out", str(out), "--no-verify"])
    assert invoke("fake/stereotipo", "fake/anti").exit_code == 0
    first = {p.name for p in out.glob("model-*.html")}
    assert len(first) == 2
    done = invoke("fake/equilibrato")
    assert done.exit_code == 0, done.output
    assert len(list(out.glob("model-*.html"))) == 1 and not first & {p.name for p in out.glob("model-*.html")}
    assert len(list((out / "files").iterdir())) == 1
    assert not list(tmp_path.glob(".*"))  # no building folder left behind
