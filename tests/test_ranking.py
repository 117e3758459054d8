"""Rankings of several runs on one task: what ranks, what is only listed, and which runs cannot be told apart.

Hand-made results and samples: ItaP-AT rows scored +1/-1/0, clustered five to an input word, so
every score below can be counted by hand.
"""

from __future__ import annotations

import pytest

from equita.runners.results.ranking import Entry, rank_task


def _samples(scores: list[int], task: str = "itap-at") -> list[dict]:
    return [{"task": task, "id": f"r{i}", "metric_input": {"clusters": f"w{i // 5}"}, "score": s} for i, s in enumerate(scores)]


def _entry(model: str, scores: list[int] | None, *, score: float | None = None, limit=None, version="2.0.0", revision="abcdef0123456789",
           interpretable=True, request=("Generate", "chat_template"), rows_in_dataset=None) -> Entry:  # fmt: skip
    value = score if score is not None else sum(scores) / len(scores)
    n = len(scores) if scores else 40
    task = {
        "dataset": {"version": version}, "metric": {"name": "itap_at_bias"}, "request": {"type": request[0], "format": request[1]},
        "n": n, "rows_in_dataset": rows_in_dataset or n,
        "results": {"bias_score": value, "ci_low": value - 0.1, "ci_high": value + 0.1, "interpretable": interpretable, "p_error": 0.9 if not interpretable else 0.1},
    }  # fmt: skip
    results = {"model": {"id": model, "revision": revision}, "settings": {"limit": limit}, "tasks": {"itap-at": task}}
    return Entry(results, _samples(scores) if scores else None)


def _order(ranking) -> list[tuple]:
    return [(s.entry.model, s.rank) for s in ranking.standings]


def test_bias_scores_rank_by_their_distance_from_the_unbiased_value_not_their_sign():
    # -0.3 is further from 0 than +0.1: the model at +0.1 ranks first.
    entries = [_entry("minus", None, score=-0.3), _entry("plus", None, score=0.1), _entry("far", None, score=0.6)]
    (ranking,) = rank_task("itap-at", entries)
    assert _order(ranking) == [("plus", 1), ("minus", 2), ("far", 3)]


@pytest.mark.parametrize(
    "options, mark, ranked",
    [
        ({"limit": 10, "rows_in_dataset": 2310}, "quick look (--limit 10", False),
        ({"interpretable": False}, "not interpretable (p(error) 0.90): not ranked", False),
        ({"revision": "unpinned-server:1234"}, "model revision not pinned", True),
        ({"request": ("Generate", "plain")}, "request Generate/plain, unlike the others' Generate/chat_template", True),
        # A limit at or above the task's size cut nothing: the run is whole and ranked.
        ({"limit": 5000}, None, True),
    ],
)
def test_runs_that_cannot_be_read_side_by_side_carry_a_mark(options, mark, ranked):
    entries = [_entry("a", None, score=0.2), _entry("b", None, score=0.3), _entry("odd", None, score=0.0, **options)]
    (ranking,) = rank_task("itap-at", entries)
    odd = next(s for s in ranking.standings if s.entry.model == "odd")
    assert (odd.rank is not None) == ranked
    if mark:
        assert any(m.startswith(mark) for m in odd.marks), odd.marks
    else:
        assert odd.marks == []
    if not ranked:  # listed after the ranked ones
        assert ranking.standings[-1] is odd and [s.rank for s in ranking.standings[:-1]] == [1, 2]


def test_dataset_major_versions_are_ranked_apart_and_say_so():
    entries = [_entry("new", None, score=0.2), _entry("old", None, score=0.1, version="1.3.0")]
    rankings = rank_task("itap-at", entries)
    assert [(r.version, [s.entry.model for s in r.standings]) for r in rankings] == [("2", ["new"]), ("1", ["old"])]
    assert all("dataset versions differ (v1: old@abcdef01; v2: new@abcdef01)" in r.version_note for r in rankings)


def test_identical_answers_share_a_group_and_a_shift_on_every_row_separates():
    # 40 rows in 8 input words. "same" answers exactly as "base"; "shifted" turns every 0 into +1.
    base = [1, 0, -1, 0, 1] * 8
    shifted = [1, 1, -1, 1, 1] * 8
    entries = [_entry("base", base), _entry("same", list(base)), _entry("shifted", shifted)]
    (ranking,) = rank_task("itap-at", entries)
    by_model = {s.entry.model: s for s in ranking.standings}
    # base and same: each word sums 1 - 1 + 1 = +1, 8 / 40 = 0.2; shifted: each word +3, 24 / 40 = 0.6, further from 0.
    assert by_model["base"].value == pytest.approx(0.2) and by_model["shifted"].value == pytest.approx(0.6)
    pair = next(p for p in ranking.pairs if {p["a"], p["b"]} == {"base@abcdef01", "same@abcdef01"})
    assert pair["difference"] == 0 and pair["p_value"] == 1.0 and pair["n_units"] == 8
    shift = next(p for p in ranking.pairs if "shifted@abcdef01" in (p["a"], p["b"]) and "base@abcdef01" in (p["a"], p["b"]))
    assert abs(shift["difference"]) == pytest.approx(0.4) and shift["distance_p_value"] < 0.05
    assert by_model["base"].letters == by_model["same"].letters == "a" and by_model["shifted"].letters == "b"


def test_only_the_best_max_paired_runs_are_compared_pairwise(monkeypatch):
    """The pairs grow with the square of the runs: past MAX_PAIRED ranked runs, the ones below are ranked without letters, and the ranking says so."""
    monkeypatch.setattr("equita.runners.results.ranking.MAX_PAIRED", 3)
    entries = [_entry(f"m{k}", [1] * k + [0] * (10 - k)) for k in range(5)]  # scores 0.0, 0.1, ... 0.4: m0 closest to unbiased
    (ranking,) = rank_task("itap-at", entries)
    assert [s.entry.model for s in ranking.standings] == ["m0", "m1", "m2", "m3", "m4"] and [s.rank for s in ranking.standings] == [1, 2, 3, 4, 5]
    assert len(ranking.pairs) == 3 and {p["a"] for p in ranking.pairs} | {p["b"] for p in ranking.pairs} == {"m0@abcdef01", "m1@abcdef01", "m2@abcdef01"}
    assert all(s.letters for s in ranking.standings[:3]) and not any(s.letters for s in ranking.standings[3:])
    assert any(note.startswith("Only the best 3 of the 5 ranked runs are compared pairwise") for note in ranking.notes)


def test_runs_without_samples_are_ranked_without_groups():
    entries = [_entry("a", [1, 0, 0, 0, 0] * 2), _entry("b", None, score=0.5)]
    (ranking,) = rank_task("itap-at", entries)
    assert [s.rank for s in ranking.standings] == [1, 2] and all(s.letters == "" for s in ranking.standings)
    assert any("no samples" in note for note in ranking.notes)


def test_samples_that_disagree_on_their_units_are_named_not_paired():
    a, b = _entry("a", [1, 0, 0, 0, 0] * 2), _entry("b", [1, 1, 0, 0, 0] * 2)
    b.samples[0]["metric_input"]["clusters"] = "elsewhere"
    (ranking,) = rank_task("itap-at", [a, b])
    assert "cannot pair the samples" in ranking.pairs[0]["error"] and "r0" in ranking.pairs[0]["error"]


def test_the_comparison_report_prints_the_ranking_and_the_paired_tests(tmp_path):
    from equita.runners.results import report

    base = [1, 0, -1, 0, 1] * 8
    entries = [_entry("base", base), _entry("same", list(base)), _entry("shifted", [1, 1, -1, 1, 1] * 8)]
    for entry in entries:  # what write_report is given: results and samples side by side
        entry.results.update(created="-", equita={"version": "-"})
    text = report.write_report([e.results for e in entries], tmp_path, [e.samples for e in entries]).read_text()
    ranking = [line for line in text.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ") or line.startswith("| 3 ")]
    # base and same at +0.200 share group a; shifted at +0.600 is further from 0 and differs.
    assert [line.split("|")[2].strip() for line in ranking] == ["base@abcdef01", "same@abcdef01", "shifted@abcdef01"]
    assert [line.split("|")[5].strip() for line in ranking] == ["a", "a", "b"]
    pairs = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| base@") or line.startswith("| same@")]
    # A, B, A - B, its interval, distance A - B, p, Holm p, shared rows, units. The exact permutation
    # test over 8 words: only the observed signs and their reverse are as extreme, 2 / 256 = 0.0078;
    # Holm multiplies the two smallest of three by 3 and 2, then keeps the running maximum: 0.0234.
    assert pairs == [
        ["base@abcdef01", "same@abcdef01", "+0.000", "[+0.000, +0.000]", "+0.000", "1.0000", "1.0000", "40", "8"],
        ["base@abcdef01", "shifted@abcdef01", "-0.400", "[-0.400, -0.400]", "-0.400", "0.0078", "0.0234", "40", "8"],
        ["same@abcdef01", "shifted@abcdef01", "-0.400", "[-0.400, -0.400]", "-0.400", "0.0078", "0.0234", "40", "8"],
    ]
    assert "Paired comparisons over the rows both models answered: paired bootstrap over 8 units" in text


def _gente_entry(model: str, labels: list[int]) -> Entry:
    """A GeNTE translation result: accuracy (%) with no interval of its own, one 0/1 score per entry."""
    task = {"dataset": {"version": "1.0.0"}, "metric": {"name": "gente_neutrality"}, "request": {"type": "Generate", "format": "plain"},
            "n": len(labels), "rows_in_dataset": len(labels), "results": {"accuracy": 100 * sum(labels) / len(labels)}}  # fmt: skip
    samples = [{"task": "gfg-translation-gente", "id": f"e{i}", "score": s} for i, s in enumerate(labels)]
    return Entry({"model": {"id": model, "revision": "0" * 16}, "settings": {"limit": None}, "tasks": {"gfg-translation-gente": task}}, samples)


def test_accuracies_rank_higher_first_and_get_an_interval_from_their_samples():
    from equita.runners.hub.leaderboard import sample_interval

    good, poor = _gente_entry("good", [1, 1, 1, 0] * 10), _gente_entry("poor", [1, 0, 0, 0] * 10)
    (ranking,) = rank_task("gfg-translation-gente", [poor, good])
    assert [(s.entry.model, s.rank, s.value) for s in ranking.standings] == [("good", 1, 75.0), ("poor", 2, 25.0)]
    (pair,) = ranking.pairs
    # 40 entries, each its own unit; A - B = 75 - 25 = 50 points, and no distance for an accuracy.
    assert pair["difference"] == pytest.approx(50.0) and "distance_difference" not in pair and pair["p_value"] < 0.001
    assert [s.letters for s in ranking.standings] == ["a", "b"]
    for standing in ranking.standings:
        sample_interval(standing, "gfg-translation-gente", ranking)
        assert standing.interval_from_samples and standing.low < standing.value < standing.high and 0 <= standing.low and standing.high <= 100
