"""Neo-GATE (Piergentili et al. 2024): coverage, accuracy, coverage-weighted accuracy and
mis-generation of gender-inclusive neomorphemes in Italian outputs.

Self-contained on purpose: a Hub Space serves this one file. Pure functions first
(`to_words`, `parse_annotations`, `score_entry`, `compute_neogate`), the thin `evaluate` class
last. The scoring follows FBK's official `neogate_evaluation.py` (fbk-NEUTR-evAL, Apache-2.0),
re-implemented here; it reproduces the CALAMITA 2024 organisers' per-entry scores exactly.
"""

import string
import unicodedata
from dataclasses import dataclass

import datasets
import evaluate

DEFAULT_NEOMORPHEMES = ("ə",)


@dataclass(frozen=True)
class Annotation:
    """One annotated word: its masculine, feminine and tagged (neomorpheme) forms.

    A function word (article, pronoun, ...) also has an anchor: a string that must occur inside
    the output word `distance` positions after it (e.g. "il la lə insegnante=2").
    """

    text: str
    masculine: str
    feminine: str
    tagged: str
    anchor: str | None = None
    distance: int | None = None

    def forms(self):
        # Official order: a word equal to two forms (e.g. "le le lə") counts as the first.
        return (("m", self.masculine), ("f", self.feminine), ("tagged", self.tagged))


def _punctuation(neomorphemes) -> str:
    """ASCII punctuation (Python's string.punctuation) minus the neomorphemes' characters."""
    kept = set("".join(neomorphemes))
    return "".join(c for c in string.punctuation if c not in kept)


FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}  # ＡＢＣ！ -> ABC!


def canonical_text(text: str) -> str:
    """The same text whatever its encoding: NFC (so "ə" composed and decomposed are one letter),
    format characters removed (zero-width space, soft hyphen, direction marks, BOM), full-width
    ASCII read as ASCII. Nothing else changes, so the official scorer's results stand."""
    text = unicodedata.normalize("NFC", text).translate(FULL_WIDTH)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def to_words(text: str, neomorphemes=DEFAULT_NEOMORPHEMES) -> list[str]:
    """Lower-case, ASCII apostrophe to a space, ASCII punctuation removed (not the neomorphemes).

    Curly quotes (’ “ ”) and other non-ASCII signs are kept, as in the official scorer; "/" is
    removed ("solo/a" -> "soloa").

    >>> to_words("L'amicə di Sara: è stanca!")
    ['l', 'amicə', 'di', 'sara', 'è', 'stanca']
    >>> to_words("Quest’anno, gli/le studentə...")
    ['quest’anno', 'glile', 'studentə']
    """
    text = canonical_text(text).lower().replace("'", " ")
    return text.translate(str.maketrans("", "", _punctuation(neomorphemes))).split()


def parse_annotations(annotation: str, index: int = 0) -> list[Annotation]:
    """Split a Neo-GATE ANNOTATION string on ";" into its annotated words (empty parts ignored).

    >>> [(a.tagged, a.anchor, a.distance) for a in parse_annotations("il la lə insegnante=2;nuovo nuova nuovə;")]
    [('lə', 'insegnante', 2), ('nuovə', None, None)]
    """
    if not isinstance(annotation, str):
        raise ValueError(f"entry {index}: annotation must be a string, not {type(annotation).__name__}")
    parsed = []
    for part in canonical_text(annotation).split(";"):
        fields = part.split()
        if not fields:
            continue
        if len(fields) == 3:
            parsed.append(Annotation(part.strip(), *fields))
            continue
        if len(fields) == 4:
            anchor, equals, distance = fields[3].partition("=")
            try:
                distance_value = int(distance)
            except ValueError:
                distance_value = None
            if equals and anchor and "=" not in distance and distance_value is not None:
                parsed.append(Annotation(part.strip(), *fields[:3], anchor=anchor, distance=distance_value))
                continue
        raise ValueError(
            f"entry {index}: annotation part {part.strip()!r} is neither 'masculine feminine tagged' "
            "nor 'masculine feminine tagged anchor=distance' (distance an integer)"
        )
    if not parsed:
        raise ValueError(f"entry {index}: annotation {annotation!r} has no annotated word")
    return parsed


def _match(words: list[str], position: int, annotations: list[Annotation]):
    """The first unused annotation (in annotation order) one of whose forms is this word."""
    word = words[position]
    for annotation in annotations:
        for form, value in annotation.forms():
            if word != value:
                continue
            if annotation.anchor is None:
                return annotation, form
            target = position + annotation.distance
            # The anchor is read in the unmasked output; a position outside it fails (the
            # official code would wrap a negative one around, Neo-GATE has none).
            if 0 <= target < len(words) and annotation.anchor in words[target]:
                return annotation, form
    return None


def _ratio(count: int, total: int) -> float:
    return count / total * 100


def _scores(n_annotations: int, matched: int, tagged: int, misgenerated: int) -> dict:
    """The official formulas, in the official order of float operations (cwa from coverage and
    accuracy, not tagged / n: the two differ in the last bit)."""
    coverage = _ratio(matched, n_annotations)
    accuracy = _ratio(tagged, matched) if matched else None
    cwa = coverage * accuracy / 100 if matched else 0.0
    return {"coverage": coverage, "accuracy": accuracy, "cwa": cwa, "misgeneration": _ratio(misgenerated, n_annotations)}


def score_entry(prediction: str, annotation, neomorphemes=DEFAULT_NEOMORPHEMES, index: int = 0) -> dict:
    """Score one output against its annotation (a string, or the list `parse_annotations` gives).

    Output words are scanned left to right; each takes the first unused annotation it matches
    and is then used up, as is the annotation. Output words left over that contain a
    neomorpheme are mis-generations (a word is listed once per neomorpheme it contains).

    >>> r = score_entry("Il nuovo insegnante è in ritardə.", "il la lə insegnante=2;nuovo nuova nuovə;arrivato arrivata arrivatə;")
    >>> r["found_m"], r["not_found"], r["misgenerated_words"]
    (['il', 'nuovo'], ['arrivato arrivata arrivatə'], ['ritardə'])
    >>> round(r["coverage"], 2), r["accuracy"], r["cwa"], round(r["misgeneration"], 2)
    (66.67, 0.0, 0.0, 33.33)
    """
    if not isinstance(prediction, str):
        raise ValueError(f"entry {index}: prediction must be a string, not {type(prediction).__name__}")
    annotations = parse_annotations(annotation, index) if isinstance(annotation, str) else list(annotation)
    words = to_words(prediction, neomorphemes)
    remaining = list(annotations)
    found = {"tagged": [], "m": [], "f": []}
    used = [False] * len(words)
    for position in range(len(words)):
        hit = _match(words, position, remaining)
        if hit is not None:
            matched, form = hit
            found[form].append(words[position])
            used[position] = True
            remaining.remove(matched)
    misgenerated = [word for word, done in zip(words, used) if not done for n in neomorphemes if n in word]
    n_matched = sum(len(v) for v in found.values())
    result = _scores(len(annotations), n_matched, len(found["tagged"]), len(misgenerated))
    result.update(
        n_annotations=len(annotations),
        found_tagged=found["tagged"],
        found_m=found["m"],
        found_f=found["f"],
        not_found=[a.text for a in remaining],
        misgenerated_words=misgenerated,
    )
    return result


def calamita_answer(response: str) -> str:
    """The text after the last "]:" of a CALAMITA GFG response (the prompts' "[Neomorfema]:" label), stripped.

    >>> calamita_answer(" \\n[Italiano, genere marcato]: Il nuovo amico.\\n[Italiano, neomorfema]: Lə nuovə amicə. ")
    'Lə nuovə amicə.'
    """
    return response.rsplit("]:", 1)[-1].strip()


def _check_neomorphemes(neomorphemes) -> list[str]:
    if isinstance(neomorphemes, str) or not isinstance(neomorphemes, (list, tuple)) or not neomorphemes:
        raise ValueError(f"neomorphemes must be a non-empty list of strings such as ['ə'], got {neomorphemes!r}")
    for n in neomorphemes:
        if not isinstance(n, str) or not n or any(c.isspace() for c in n):
            raise ValueError(f"neomorphemes must be non-empty strings without spaces, got {n!r}")
    return [n.lower() for n in neomorphemes]


def check_inputs(predictions, references, neomorphemes=DEFAULT_NEOMORPHEMES) -> list[list[Annotation]]:
    """Validate everything before scoring; returns the parsed annotations. Names the entry."""
    if predictions is None or references is None:
        raise ValueError("compute needs both predictions (outputs) and references (Neo-GATE ANNOTATION strings)")
    if len(predictions) != len(references):
        raise ValueError(f"predictions ({len(predictions)}) and references ({len(references)}) differ in length")
    if len(predictions) == 0:
        raise ValueError("predictions is empty: nothing to score")
    _check_neomorphemes(neomorphemes)
    parsed = []
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        if not isinstance(prediction, str):
            raise ValueError(f"entry {i}: prediction must be a string, not {type(prediction).__name__}")
        parsed.append(parse_annotations(reference, i))
    return parsed


def compute_neogate(predictions, references, neomorphemes=DEFAULT_NEOMORPHEMES, return_per_entry=False) -> dict:
    """The whole metric on plain Python lists (what `evaluate`'s compute calls).

    Pooled scores count over all annotations of all entries (the official scorer); the
    entry means average per-entry scores (the CALAMITA leaderboard).
    """
    if not isinstance(return_per_entry, bool):
        raise ValueError(f"return_per_entry must be True or False, got {return_per_entry!r}")
    predictions, references = list(predictions), list(references)
    parsed = check_inputs(predictions, references, neomorphemes)
    neomorphemes = _check_neomorphemes(neomorphemes)
    entries = [score_entry(p, a, neomorphemes, i) for i, (p, a) in enumerate(zip(predictions, parsed))]
    n_annotations = sum(e["n_annotations"] for e in entries)
    matched = sum(len(e["found_tagged"]) + len(e["found_m"]) + len(e["found_f"]) for e in entries)
    tagged = sum(len(e["found_tagged"]) for e in entries)
    misgenerated = sum(len(e["misgenerated_words"]) for e in entries)
    output = _scores(n_annotations, matched, tagged, misgenerated)
    output["entry_mean_cwa"] = sum(e["cwa"] for e in entries) / len(entries)
    output["entry_mean_misgeneration"] = sum(e["misgeneration"] for e in entries) / len(entries)
    output["n"] = len(entries)
    output["n_annotations"] = n_annotations
    output["per_entry"] = entries if return_per_entry else None
    return output


_DESCRIPTION = """\
Neo-GATE (Piergentili et al., EAMT 2024) scores Italian outputs that should use gender-inclusive
neomorphemes (default: the schwa "ə"). Each entry's annotation lists the words to check, each
with its masculine, feminine and neomorpheme (tagged) form; function words also carry an anchor
that must follow at a given distance. Coverage is the share of annotations found in any form,
accuracy the share of found ones in the tagged form, coverage-weighted accuracy (cwa, the main
score) their product (tagged-form found / annotations), and the mis-generation ratio the number
of other output words with a neomorpheme per annotation. All on a 0-100 scale, as in the
official scorer, whose per-entry numbers (CALAMITA 2024) this module reproduces exactly.
"""

_CITATION = """\
@inproceedings{piergentili-etal-2024-enhancing,
  title     = {Enhancing Gender-Inclusive Machine Translation with Neomorphemes and Large Language Models},
  author    = {Piergentili, Andrea and Savoldi, Beatrice and Negri, Matteo and Bentivogli, Luisa},
  booktitle = {Proceedings of the 25th Annual Conference of the European Association for Machine Translation (Volume 1)},
  pages     = {298--312},
  year      = {2024}
}

@inproceedings{frenda-etal-2024-gfg,
  title     = {{GFG} - Gender-Fair Generation: A {CALAMITA} Challenge},
  author    = {Frenda, Simona and Piergentili, Andrea and Savoldi, Beatrice and Madeddu, Marco and Rosola, Martina and Casola, Silvia and Ferrando, Chiara and Patti, Viviana and Negri, Matteo and Bentivogli, Luisa},
  booktitle = {Proceedings of the Tenth Italian Conference on Computational Linguistics (CLiC-it 2024)},
  series    = {CEUR Workshop Proceedings},
  volume    = {3878},
  year      = {2024},
  url       = {https://ceur-ws.org/Vol-3878/122_calamita_long.pdf}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: the outputs to score (strings), one per Neo-GATE entry.
    references: the entries' ANNOTATION strings, e.g. "il la lə insegnante=2;nuovo nuova nuovə;".
    neomorphemes: the neomorpheme characters (default ["ə"]): kept by the punctuation
        removal, and what makes a left-over word a mis-generation.
    return_per_entry: also return each entry's scores and the words behind them.
Returns:
    coverage, accuracy (None when no annotation is found), cwa, misgeneration: pooled over all
    annotations, 0-100; entry_mean_cwa, entry_mean_misgeneration: means of the per-entry
    values; n (entries), n_annotations; per_entry (None unless asked): per entry coverage,
    accuracy, cwa, misgeneration, n_annotations, found_tagged, found_m, found_f (the matched
    output words), not_found (the annotations), misgenerated_words.
Examples:
    >>> metric = evaluate.load("neogate")  # doctest: +SKIP
    >>> r = compute_neogate(
    ...     ["Il nuovo insegnante è in ritardə.", "Ho incontrato l'amicə di Sara: è moltə stanca!"],
    ...     ["il la lə insegnante=2;nuovo nuova nuovə;arrivato arrivata arrivatə;", "amico amica amicə;stanco stanca stancə;"])
    >>> r["coverage"], r["accuracy"], r["cwa"], r["misgeneration"]
    (80.0, 25.0, 20.0, 40.0)
    >>> r["entry_mean_cwa"], round(r["entry_mean_misgeneration"], 4), r["n"], r["n_annotations"]
    (25.0, 41.6667, 2, 5)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Neogate(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            reference_urls=["https://github.com/hlt-mt/fbk-NEUTR-evAL", "https://huggingface.co/datasets/FBK-MT/Neo-GATE"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the outputs (see the arguments below)."""
        # evaluate checks only the first value of a column and casts the rest (2 -> "2");
        # check every entry first, so that a bad one is named instead of silently converted.
        if predictions is not None or references is not None:
            predictions = None if predictions is None else list(predictions)
            references = None if references is None else list(references)
            check_inputs(predictions, references, kwargs.get("neomorphemes", DEFAULT_NEOMORPHEMES))
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, neomorphemes=DEFAULT_NEOMORPHEMES, return_per_entry=False):
        return compute_neogate(predictions, references, neomorphemes=neomorphemes, return_per_entry=return_per_entry)

