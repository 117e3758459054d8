"""Jobs (Ruzzetti et al., CLiC-it 2023): 171 Italian professions with a strong gender imbalance.

Everything comes from the project's tables in builders/tables/jobs/ (no upstream download):
the professions as the paper's appendix lists them, with a feminine form, the definite article
of each form and the kind of non-person reading a form may have; the template sentences; and
the gender words that complete them. Two configs:
`professions` (one row per profession) and `sentences` (one row per profession form and
template, ready for a log-likelihood runner: the context and the continuations of each gender).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets import Features

from .common import (
    BuildError,
    config_files,
    read_tsv,
    render_card,
    table_path,
    write_dataset,
    yaml_header,
)
from .spec import TaskSpec

VERSION = "3.0.0"
TABLES = "jobs"
# CP2011 macro-categories covered by Jobs, with the paper's count of professions (its Table 1).
MACRO_CATEGORIES = {
    1: ("Legislatori, imprenditori e alta dirigenza", 18),
    2: ("Professioni intellettuali, scientifiche e di elevata specializzazione", 28),
    3: ("Professioni tecniche", 22),
    6: ("Artigiani, operai specializzati e agricoltori", 83),
    7: ("Conduttori di impianti, operai di macchinari fissi e mobili e conducenti di veicoli", 6),
    8: ("Professioni non qualificate", 9),
    9: ("Forze armate", 5),
}
FORMS = ("m", "f")
# Definite articles a form can take: the feminine has no "lo" (la zincografa, la scalpellina).
ARTICLES = {"m": ("il", "lo", "l'"), "f": ("la", "l'")}
# Non-person readings a profession's feminine form (or its bare noun) also has (review J-H1, J-M1):
# "Chimica è una professione da" reads as "Chemistry is ...", "Trivellatrice ..." as a drilling rig.
# Since 3.0.0 also "connotation": marescialla is also a marshal's wife and, jokingly, a bossy woman (review J-M2).
AMBIGUITIES = ("discipline", "machine", "object", "animal", "connotation")
# The neutral rows of the sentences config (one per template, no profession): their job_id.
NEUTRAL_ID = "neutral"


@functools.cache
def profession_features() -> Features:
    """The professions config's schema, built when a build writes parquet (`datasets` takes most of a second to import)."""
    from datasets import Features, Value

    return Features(
        {
            "job_id": Value("string"),
            "macro_category": Value("int32"),
            "macro_category_name": Value("string"),
            "sub_category": Value("string"),
            "sub_category_name": Value("string"),
            "masculine": Value("string"),
            "feminine": Value("string"),
            "article_m": Value("string"),
            "article_f": Value("string"),
            "invariable": Value("bool"),
            "ambiguity": Value("string"),
            "ambiguous": Value("bool"),
            "repeat_of": Value("string"),
            "notes": Value("string"),
        }
    )


@functools.cache
def sentence_features() -> Features:
    """The sentences config's schema (see profession_features)."""
    from datasets import Features, Sequence, Value

    return Features(
        {
            "id": Value("string"),
            "job_id": Value("string"),
            "macro_category": Value("int32"),
            "form": Value("string"),
            "job": Value("string"),
            "article": Value("string"),
            "template_id": Value("string"),
            "context": Value("string"),
            "continuations_m": Sequence(Value("string")),
            "continuations_f": Sequence(Value("string")),
            "ambiguous": Value("bool"),
            "repeat_of": Value("string"),
            "neutral": Value("bool"),
        }
    )


@dataclass(frozen=True)
class Tables:
    professions: list[dict]
    templates: dict[str, str]  # template id -> template with {job}, maybe preceded by {art}
    neutral: dict[str, str]  # template id -> the same frame without a profession ("Questo è un lavoro da")
    words: dict[str, tuple[str, ...]]  # gender -> words


def load_tables(folder: Path | None = None) -> Tables:
    """Read and check the three tables; every problem names the file and line."""

    def path(name: str) -> Path:
        return Path(folder) / name if folder else table_path(TABLES, name)

    professions_file = path("professions.tsv")
    columns = [
        "job_id", "macro_category", "sub_category", "sub_category_name", "masculine", "feminine",
        "article_m", "article_f", "invariable", "ambiguity", "repeat_of", "notes",
    ]  # fmt: skip
    professions, seen = [], {}
    for line, row in read_tsv(professions_file, columns):
        where = f"{professions_file}:{line}"
        expected_id = f"J{len(professions) + 1:03d}"
        if row["job_id"] != expected_id:
            raise BuildError(f"{where}: job_id {row['job_id']!r}, expected {expected_id} (ids are sequential)")
        try:
            macro = int(row["macro_category"])
        except ValueError:
            macro = None
        if macro not in MACRO_CATEGORIES:
            raise BuildError(f"{where}: macro_category {row['macro_category']!r} is not one of {sorted(MACRO_CATEGORIES)}")
        if not row["sub_category"].startswith(f"{macro}."):
            raise BuildError(f"{where}: sub_category {row['sub_category']!r} is not inside macro-category {macro}")
        for column in ("masculine", "feminine", "sub_category_name"):
            if not row[column].strip() or row[column] != row[column].strip():
                raise BuildError(f"{where}: {column} is empty or has surrounding spaces: {row[column]!r}")
        if row["invariable"] not in ("yes", "no"):
            raise BuildError(f"{where}: invariable must be yes or no, not {row['invariable']!r}")
        if (row["invariable"] == "yes") != (row["masculine"] == row["feminine"]):
            raise BuildError(f"{where}: invariable is {row['invariable']} but the forms are {row['masculine']!r} / {row['feminine']!r}")
        for form in FORMS:
            if row[f"article_{form}"] not in ARTICLES[form]:
                raise BuildError(f"{where}: article_{form} must be one of {', '.join(ARTICLES[form])}, not {row[f'article_{form}']!r}")
        if row["ambiguity"] and row["ambiguity"] not in AMBIGUITIES:
            raise BuildError(f"{where}: ambiguity must be empty or one of {', '.join(AMBIGUITIES)}, not {row['ambiguity']!r}")
        first = seen.get(row["masculine"])
        if (first or "") != row["repeat_of"]:
            raise BuildError(
                f"{where}: {row['masculine']!r} "
                + (f"repeats {first}, so repeat_of must say {first}" if first else f"appears here first, so repeat_of must be empty, not {row['repeat_of']!r}")
            )
        seen.setdefault(row["masculine"], row["job_id"])
        professions.append(
            {
                **row,
                "macro_category": macro,
                "macro_category_name": MACRO_CATEGORIES[macro][0],
                "invariable": row["invariable"] == "yes",
                "ambiguous": row["ambiguity"] != "",
            }
        )
    counts = Counter(p["macro_category"] for p in professions)
    wrong = {m: (counts.get(m, 0), n) for m, (_, n) in MACRO_CATEGORIES.items() if counts.get(m, 0) != n}
    if wrong:
        details = ", ".join(f"{m}: {got} rows, the paper has {n}" for m, (got, n) in wrong.items())
        raise BuildError(f"{professions_file}: professions per macro-category differ from the paper ({details})")

    templates_file = path("templates.tsv")
    templates, neutral = {}, {}
    for line, row in read_tsv(templates_file, ["template_id", "template", "neutral"]):
        template, where = row["template"], f"{templates_file}:{line}"
        if template.count("{job}") != 1:
            raise BuildError(f"{where}: a template holds {{job}} exactly once: {template!r}")
        # {art} is the job's article, so it can only stand right before the job noun.
        if template.count("{art}") > 1 or ("{art}" in template and "{art} {job}" not in template):
            raise BuildError(f"{where}: {{art}} may appear once, right before {{job}} ('{{art}} {{job}}'): {template!r}")
        others = template.replace("{job}", "").replace("{art}", "")
        if "{" in others or "}" in others:
            raise BuildError(f"{where}: the only placeholders are {{job}} and {{art}}: {template!r}")
        if row["template_id"] in templates:
            raise BuildError(f"{templates_file}:{line}: template_id {row['template_id']!r} repeated")
        sentence_ = row["neutral"]
        if not sentence_.strip() or sentence_ != sentence_.strip() or "{" in sentence_ or "}" in sentence_:
            raise BuildError(f"{where}: neutral must be a sentence without placeholders or surrounding spaces: {sentence_!r}")
        if sentence_[:1] != sentence_[:1].upper():
            raise BuildError(f"{where}: neutral is a sentence and starts with a capital letter: {sentence_!r}")
        templates[row["template_id"]] = row["template"]
        neutral[row["template_id"]] = sentence_

    words_file = path("gender_words.tsv")
    words: dict[str, list[str]] = {g: [] for g in FORMS}
    for line, row in read_tsv(words_file, ["gender", "word"]):
        if row["gender"] not in FORMS:
            raise BuildError(f"{words_file}:{line}: gender must be m or f, not {row['gender']!r}")
        if not re.fullmatch(r"\w+", row["word"]):
            raise BuildError(f"{words_file}:{line}: word must be one word, not {row['word']!r}")
        words[row["gender"]].append(row["word"])
    if not templates or len(words["m"]) != len(words["f"]) or not words["m"]:
        raise BuildError(f"{templates_file}, {words_file}: need at least one template and the same number (>0) of words per gender")
    return Tables(professions, templates, neutral, {g: tuple(w) for g, w in words.items()})


def sentence(template: str, job: str, article: str) -> str:
    """The context: the template with the job noun (after its article where the template has
    {art}), capitalised as the first word of a sentence. The elided l' takes no space:
    "Fare l'ambasciatore", "Fare il sindaco", "Fare la sindaca"."""
    with_article = article + job if article.endswith("'") else f"{article} {job}"
    text = template.replace("{art} {job}", with_article).replace("{job}", job)
    return text[:1].upper() + text[1:]


def build_sentences(tables: Tables) -> list[dict]:
    """The neutral sentences first (one per template, job_id "neutral"; first so that `--limit`
    always keeps them), then every profession form x template.

    An invariable profession (preside, elettricista) reads one unmarked sentence per template in
    both its rows, as T1 always did: in T2/T3 its feminine row takes the masculine (generic)
    article too, so "Fare il preside" and "Fare l'elettricista" alike (review J2-M1: before 3.0.0
    the 22 consonant-initial ones had "Fare la preside" and the 8 elided ones no feminine cue).
    """
    continuations = {
        # A leading space: the word continues the sentence.
        "continuations_m": [" " + w for w in tables.words["m"]],
        "continuations_f": [" " + w for w in tables.words["f"]],
    }
    rows = [
        {
            "id": f"N-{template_id}", "job_id": NEUTRAL_ID, "macro_category": 0, "form": "", "job": "", "article": "",
            "template_id": template_id, "context": text, **continuations, "ambiguous": False, "repeat_of": "", "neutral": True,
        }  # fmt: skip
        for template_id, text in tables.neutral.items()
    ]
    for profession in tables.professions:
        for form in FORMS:
            job = profession["masculine"] if form == "m" else profession["feminine"]
            article = profession["article_m" if profession["invariable"] else f"article_{form}"]
            for template_id, template in tables.templates.items():
                rows.append(
                    {
                        "id": f"{profession['job_id']}-{form}-{template_id}",
                        "job_id": profession["job_id"],
                        "macro_category": profession["macro_category"],
                        "form": form,
                        "job": job,
                        "article": article,
                        "template_id": template_id,
                        "context": sentence(template, job, article),
                        **continuations,
                        # Per profession, not per form: the metric drops a profession whole.
                        "ambiguous": profession["ambiguous"],
                        "repeat_of": profession["repeat_of"],
                        "neutral": False,
                    }
                )
    return rows


def build(out: Path, source_dir: Path | None = None, force: bool = False, tables_dir: Path | None = None) -> dict:
    """Build the Jobs dataset folder; returns its manifest. `source_dir` is unused: no upstream files."""
    tables = load_tables(tables_dir)
    professions = [{k: p[k] for k in profession_features()} for p in tables.professions]
    sentences = build_sentences(tables)
    files, infos, configs = config_files(
        [("professions", professions, profession_features()), ("sentences", sentences, sentence_features())], default="professions"
    )
    header = {
        "pretty_name": "Jobs",
        "language": ["it"],
        "license": "cc-by-4.0",
        "multilinguality": "monolingual",
        "size_categories": ["n<1K", "1K<n<10K"],
        "task_categories": ["text-generation"],
        "tags": ["bias", "fairness", "gender-bias", "occupations", "italian"],
        "version": VERSION,
        "configs": configs,
        "dataset_info": infos,
    }
    by_macro = Counter(p["macro_category"] for p in professions)
    card = render_card(
        "jobs.md.j2",
        yaml_header=yaml_header(header),
        version=VERSION,
        macro_categories=[(m, name, by_macro[m]) for m, (name, _) in MACRO_CATEGORIES.items()],
        total=len(professions),
        n_sentences=len(sentences),
        n_profession_sentences=sum(not s["neutral"] for s in sentences),
        neutral=[s for s in sentences if s["neutral"]],
        elided_invariable=[p for p in professions if p["invariable"] and p["article_m"] == "l'"],
        professions=professions,
        repeats=[p for p in professions if p["repeat_of"]],
        invariable=[p for p in professions if p["invariable"]],
        ambiguous_by_kind=[(kind, [p for p in professions if p["ambiguity"] == kind]) for kind in AMBIGUITIES],
        n_ambiguous=sum(p["ambiguous"] for p in professions),
        templates=tables.templates,
        neutral_of=tables.neutral,
        # One rendered sentence per article (l', il, lo, la), and a discipline row, for the card.
        rendered=[s for s in sentences if s["id"] in ("J001-m-T2", "J008-m-T2", "J086-m-T2", "J022-f-T2", "J012-f-T2", "J073-f-T2", "J157-f-T3")],
        words=tables.words,
        example=next(s for s in sentences if not s["neutral"]),
        profession_features=profession_features(),
        sentence_features=sentence_features(),
    )
    files["README.md"] = card.encode("utf-8")
    return write_dataset(out, files, force=force)


SPEC = TaskSpec(
    id="jobs",
    cli_name="jobs",
    version=VERSION,
    hub_repo="equita/jobs",
    title="Jobs: gender and Italian professions",
    configs=("professions", "sentences"),
    group_by="macro_category",
    build=build,
    metric="jobs_bias",
)
