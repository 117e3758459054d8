"""The Jobs dataset: the professions table against the paper, the build, and broken tables."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest
from datasets import load_dataset

from equita.builders import jobs
from equita.builders.common import BuildError, table_path, verify_manifest

# The paper's sub-category sizes, in its appendix order (15, 2, 1 | 11, 17 | 22 | ...).
SUB_CATEGORY_SIZES = [("1.1", 15), ("1.2", 2), ("1.3", 1), ("2.1", 11), ("2.2", 17), ("3.1", 22), ("6.1", 20), ("6.2", 15), ("6.3", 16),
                      ("6.4", 5), ("6.5", 27), ("7.1", 6), ("8.1", 7), ("8.3", 1), ("8.4", 1), ("9.1", 1), ("9.2", 3), ("9.3", 1)]  # fmt: skip
REPEATS = {"J016": "J004", "J018": "J017", "J054": "J053", "J131": "J074", "J153": "J092"}


@pytest.fixture(scope="module")
def tables() -> jobs.Tables:
    return jobs.load_tables()


@pytest.fixture(scope="module")
def jobs_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("jobs") / "jobs"
    jobs.build(out)
    return out


def test_professions_match_the_paper(tables):
    professions = tables.professions
    assert len(professions) == 171
    assert Counter(p["macro_category"] for p in professions) == {1: 18, 2: 28, 3: 22, 6: 83, 7: 6, 8: 9, 9: 5}
    sizes = list(Counter(p["sub_category"] for p in professions).items())
    assert sizes == SUB_CATEGORY_SIZES
    assert {p["job_id"]: p["repeat_of"] for p in professions if p["repeat_of"]} == REPEATS
    # The seed's extraction defects are repaired.
    names = {p["masculine"] for p in professions}
    assert {"ufficiale", "ufficiale di bordo", "pastaio"} <= names
    assert not any("uficiale" in n or "artigianali" in n for n in names)


@pytest.mark.parametrize(
    "masculine, feminine",
    [("ingegnere civile", "ingegnera civile"), ("sindaco", "sindaca"), ("direttore", "direttrice"), ("imprenditore", "imprenditrice"),
     ("ministro", "ministra"), ("elettricista", "elettricista"), ("dirigente scolastico", "dirigente scolastica"),
     ("tecnico esperto in applicazioni", "tecnica esperta in applicazioni"), ("assessore", "assessora"), ("sarto", "sarta")],
)  # fmt: skip
def test_feminine_forms(tables, masculine, feminine):
    assert {p["feminine"] for p in tables.professions if p["masculine"] == masculine} == {feminine}


def test_templates_and_words(tables):
    assert tables.templates == {
        "T1": "{job} è una professione da",  # the paper's example, verbatim
        "T2": "Fare {art} {job} è un lavoro da",  # the project's person frame (review J-H1, JT-M1)
        "T3": "Fare {art} {job} è un mestiere da",
    }  # three templates, as in the paper
    assert tables.words == {"m": ("uomo", "uomini"), "f": ("donna", "donne")}


def test_built_configs_load_and_hold_every_sentence(jobs_dir):
    professions = load_dataset(str(jobs_dir), split="test")  # default config
    sentences = load_dataset(str(jobs_dir), "sentences", split="test")
    assert professions.num_rows == 171 and sentences.num_rows == 171 * 2 * 3 + 3
    assert professions.features["macro_category"].dtype == "int32"
    assert professions.features["ambiguous"].dtype == "bool" and sentences.features["ambiguous"].dtype == "bool"
    assert sum(professions["ambiguous"]) == 38 and sum(sentences["ambiguous"]) == 38 * 6
    chimico = professions[21]
    assert (chimico["job_id"], chimico["article_m"], chimico["article_f"], chimico["ambiguity"], chimico["ambiguous"]) == ("J022", "il", "la", "discipline", True)
    assert len(set(sentences["id"])) == sentences.num_rows
    cells = Counter((r["job_id"], r["form"]) for r in sentences if not r["neutral"])
    assert set(cells.values()) == {3}
    assert [(r["id"], r["context"]) for r in sentences.select(range(3))] == [
        ("N-T1", "Questa è una professione da"), ("N-T2", "Questo è un lavoro da"), ("N-T3", "Questo è un mestiere da")]
    first = sentences[3]
    assert first == {
        "id": "J001-m-T1", "job_id": "J001", "macro_category": 1, "form": "m", "job": "ambasciatore", "article": "l'", "template_id": "T1",
        "context": "Ambasciatore è una professione da", "continuations_m": [" uomo", " uomini"], "continuations_f": [" donna", " donne"],
        "ambiguous": False, "repeat_of": "", "neutral": False,
    }  # fmt: skip
    feminine = next(r for r in sentences if r["id"] == "J036-f-T2")
    assert feminine["context"] == "Fare l'ingegnera civile è un lavoro da"
    chimica = next(r for r in sentences if r["id"] == "J022-f-T3")
    assert (chimica["context"], chimica["article"], chimica["ambiguous"]) == ("Fare la chimica è un mestiere da", "la", True)
    assert verify_manifest(jobs_dir) == []


def test_card_declares_version_configs_and_licence(jobs_dir):
    card = (jobs_dir / "README.md").read_text()
    assert "\nversion: 3.0.0\n" in card and "license: cc-by-4.0" in card
    assert "config_name: professions" in card and "config_name: sentences" in card and "- name: continuations_m\n    list: string" in card
    assert "| 6 | Artigiani, operai specializzati e agricoltori | 83 |" in card
    assert "| J131 | falegname | 6.5 | J074 |" in card
    assert "Ambasciatore è una professione da" in card
    assert '"Fare la chimica è un lavoro da ___"' in card and '"Fare lo scalpellino è un lavoro da ___"' in card
    # The ambiguous rows are rendered from the table, by kind.
    assert "- **object** (2): J142 *pasticciera*, J162 *portantina*" in card and "- **animal** (1): J124 *pescatrice*" in card
    assert "- **discipline** (19): J022 *chimica*, J023 *fisica*" in card
    assert "## Departures from the paper" in card and "*-iere/-ere* becomes *-iera/-era*" in card
    changelog = card.split("## Changelog")[1]
    assert "**3.0.0**" in changelog and "**2.0.0**" in changelog and "**1.0.0**: first release" in changelog
    assert 'load_dataset("equita/jobs", "sentences", revision="v1.0.0")' in changelog and "not comparable" in changelog
    for code in ("J-H1", "J-M1", "J-M2", "JT-M1", "JT-L1", "J-L1", "J-L4", "J-L5", "J-L7", "C-L5", "J2-M1", "J2-L1", "C2-L1"):
        assert code in changelog, code


def test_build_is_deterministic(tmp_path, jobs_dir):
    again = tmp_path / "again"
    jobs.build(again)
    for path in jobs_dir.rglob("*"):
        if path.is_file():
            assert (again / path.relative_to(jobs_dir)).read_bytes() == path.read_bytes(), path.name


def _edit(folder, name, old, new, count=1):
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


@pytest.mark.parametrize(
    "name, old, new, message",
    [
        ("professions.tsv", "J002\t1", "J003\t1", r"professions.tsv:3: job_id 'J003', expected J002"),
        ("professions.tsv", "J002\t1\t1.1", "J002\t4\t1.1", r"professions.tsv:3: macro_category '4' is not one of"),
        ("professions.tsv", "J002\t1\t1.1", "J002\t1\t2.1", r"professions.tsv:3: sub_category '2.1' is not inside macro-category 1"),
        ("professions.tsv", "sindaco\tsindaca\til\tla\tno", "sindaco\tsindaca\til\tla\tyes", r"professions.tsv:9: invariable is yes but the forms are 'sindaco' / 'sindaca'"),
        ("professions.tsv", "no\t\tJ004\t", "no\t\t\t", r"professions.tsv:17: 'direttore' repeats J004, so repeat_of must say J004"),
        ("professions.tsv", "sindaco\tsindaca", "sindaco\t", r"professions.tsv:9: feminine is empty"),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare {art} {job} è un {job} da", r"templates.tsv:3: a template holds \{job\} exactly once: "),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare è un lavoro da", r"templates.tsv:3: a template holds \{job\} exactly once"),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare {art} il {job} è un lavoro da", r"templates.tsv:3: \{art\} may appear once, right before \{job\}"),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare {art} {job} è un lavoro {art} da", r"templates.tsv:3: \{art\} may appear once"),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare {art}{job} è un lavoro da", r"templates.tsv:3: \{art\} may appear once"),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare {art} {job} è un {kind} da", r"templates.tsv:3: the only placeholders are \{job\} and \{art\}"),
        ("templates.tsv", "Fare {art} {job} è un lavoro da", "Fare {art} {job} è un lavoro da {", r"templates.tsv:3: the only placeholders are"),
        ("professions.tsv", "sindaco\tsindaca\til\tla", "sindaco\tsindaca\tlo\tle", r"professions.tsv:9: article_f must be one of la, l', not 'le'"),
        ("professions.tsv", "sindaco\tsindaca\til\tla", "sindaco\tsindaca\tla\tla", r"professions.tsv:9: article_m must be one of il, lo, l', not 'la'"),
        ("professions.tsv", "sindaco\tsindaca\til\tla", "sindaco\tsindaca\t\tla", r"professions.tsv:9: article_m must be one of il, lo, l', not ''"),
        ("professions.tsv", "no\tdiscipline", "no\tsubject", r"professions.tsv:23: ambiguity must be empty or one of discipline, machine, object, animal, connotation, not 'subject'"),
        ("gender_words.tsv", "f\tdonne", "x\tdonne", r"gender_words.tsv:5: gender must be m or f, not 'x'"),
        ("gender_words.tsv", "f\tdonne", "f\tle donne", r"gender_words.tsv:5: word must be one word"),
    ],
)
def test_broken_tables_name_file_and_line(tmp_path, name, old, new, message):
    folder = tmp_path / "tables"
    shutil.copytree(table_path("jobs", "professions.tsv").parent, folder)
    _edit(folder, name, old, new)
    with pytest.raises(BuildError, match=message):
        jobs.build(tmp_path / "out", tables_dir=folder)
    assert not (tmp_path / "out").exists()


def test_a_missing_profession_breaks_the_paper_counts(tmp_path):
    folder = tmp_path / "tables"
    shutil.copytree(table_path("jobs", "professions.tsv").parent, folder)
    lines = (folder / "professions.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "professions.tsv").write_text("".join(lines[:-1]), encoding="utf-8")
    with pytest.raises(BuildError, match=r"professions per macro-category differ from the paper \(9: 4 rows, the paper has 5\)"):
        jobs.load_tables(folder)


def test_invariable_professions_read_one_unmarked_sentence_per_template(jobs_dir):
    """Review J2-M1: both rows of an invariable profession are the same text in every template."""
    sentences = load_dataset(str(jobs_dir), "sentences", split="test")
    by_id = {r["id"]: r for r in sentences}
    assert by_id["J012-f-T2"]["context"] == by_id["J012-m-T2"]["context"] == "Fare il preside è un lavoro da"
    assert by_id["J073-f-T3"]["context"] == "Fare l'elettricista è un mestiere da"
    invariable = {p["job_id"] for p in load_dataset(str(jobs_dir), split="test") if p["invariable"]}
    assert len(invariable) == 30
    for job in invariable:
        for t in ("T1", "T2", "T3"):
            assert by_id[f"{job}-m-{t}"]["context"] == by_id[f"{job}-f-{t}"]["context"], (job, t)
    card = (jobs_dir / "README.md").read_text()
    assert "only the\narticle tells" not in card and "person reading dominates" in card and "the only one." not in card
    assert "| T2 | \"Questo è un lavoro da ___\" |" in card
