"""GFG gendered-language detection score (CALAMITA 2024 Gender-Fair Generation, task 1).

Self-contained on purpose: a Hub Space serves this one file. Pure functions first
(`parse_expressions`, `greedy_match`, `score_entry`, `compute_detection`), the BERTScore
similarity next, the thin `evaluate` class last.
"""

import math
import unicodedata

import bert_score
import datasets
import evaluate
import numpy as np

PAPER = "paper"
CALAMITA = "calamita"
MODES = (PAPER, CALAMITA)
# What bert_score itself uses for lang="it": multilingual BERT, layer 9.
DEFAULT_MODEL = "bert-base-multilingual-cased"
DEFAULT_LAYERS = {DEFAULT_MODEL: 9}
ANSWER_MARKER = "]:"  # the few-shot prompt's "[Espressione]:"
NONE_ANSWER = "0"

FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}  # ＡＢＣ！ -> ABC!


def canonical_text(text: str) -> str:
    """NFC, format characters removed (zero-width space, soft hyphen, direction marks, BOM),
    full-width ASCII as ASCII: the canonical text every equita metric reads (the module is
    self-contained for its Hub Space, so the five lines live in each metric; test_metric_text_normalisation
    checks they agree)."""
    text = unicodedata.normalize("NFC", text).translate(FULL_WIDTH)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def extract_answer(raw: str) -> str:
    """The text after the last "]:" (the CALAMITA harness's `separate`), stripped.

    >>> extract_answer(" (errore)\\n[Espressione]: lo studente ; preoccupato ")
    'lo studente ; preoccupato'
    >>> extract_answer("  la studentessa")
    'la studentessa'
    """
    index = raw.rfind(ANSWER_MARKER)
    if index >= 0:
        raw = raw[index + len(ANSWER_MARKER) :]
    return raw.strip()


def parse_expressions(raw: str) -> list[str]:
    """The gendered expressions of one model answer.

    The answer (after the last "]:", stripped) is split on ";", or on "," when it has no ";";
    items are stripped and empty items or items "0" dropped. "0" or an empty answer means no
    expression.

    >>> parse_expressions("[Espressione]: La studentessa ; preoccupata")
    ['La studentessa', 'preoccupata']
    >>> parse_expressions("gli studenti, i docenti")
    ['gli studenti', 'i docenti']
    >>> parse_expressions("il rettore, gli studenti ; i docenti")
    ['il rettore, gli studenti', 'i docenti']
    >>> parse_expressions(" 0 "), parse_expressions(""), parse_expressions(" ; ")
    ([], [], [])
    """
    text = extract_answer(canonical_text(raw))
    if text in ("", NONE_ANSWER):
        return []
    separator = ";" if ";" in text else ","
    items = (item.strip() for item in text.split(separator))
    return [item for item in items if item and item != NONE_ANSWER]


def greedy_match(scores) -> list[tuple[int, int, float]]:
    """One-to-one matching of rows (gold) and columns (predicted), highest score first.

    Ties go to the lower gold index, then the lower predicted index. Returns
    (gold index, predicted index, score) in the order the pairs were taken.

    >>> greedy_match([[0.9, 0.8], [0.85, 0.1]])
    [(0, 0, 0.9), (1, 1, 0.1)]
    """
    matrix = np.asarray(scores, dtype=float)
    pairs = sorted(
        ((float(matrix[g, p]), g, p) for g in range(matrix.shape[0]) for p in range(matrix.shape[1])),
        key=lambda pair: (-pair[0], pair[1], pair[2]),
    )
    used_gold, used_pred, matched = set(), set(), []
    for score, g, p in pairs:
        if g not in used_gold and p not in used_pred:
            used_gold.add(g)
            used_pred.add(p)
            matched.append((g, p, score))
    return matched


def score_entry(golds: list[str], preds: list[str], scores=None, mode: str = PAPER) -> float:
    """The score of one entry, given the gold x predicted similarity matrix.

    Both sides empty: 1. Exactly one side empty: 0. Otherwise, in paper mode, pair scores are
    clipped to [0, 1], matched greedily one-to-one, and
    score = sum of matched scores / max(#gold, #predicted) (unmatched items count 0);
    in calamita mode, score = 1 if any pair score is > 0, else 0.

    >>> score_entry(["a", "b"], ["a", "c", "d"], [[1.0, 0.0, 0.0], [0.0, 0.5, 0.2]])  # (1 + 0.5) / 3
    0.5
    >>> score_entry(["a"], ["c"], [[0.25]], mode="calamita")
    1.0
    >>> score_entry([], []), score_entry(["a"], []), score_entry([], ["a"])
    (1.0, 0.0, 0.0)
    """
    if not golds and not preds:
        return 1.0
    if not golds or not preds:
        return 0.0
    matrix = np.asarray(scores, dtype=float)
    if mode == CALAMITA:
        return 1.0 if bool(np.any(matrix > 0)) else 0.0
    matrix = np.clip(matrix, 0.0, 1.0)
    return float(sum(score for _, _, score in greedy_match(matrix)) / max(len(golds), len(preds)))


def exact_match_similarity(golds: list[str], preds: list[str]) -> np.ndarray:
    """A toy similarity: 1 where the two strings are equal ignoring case and outer spaces, else 0.

    >>> exact_match_similarity(["Lo studente", "preoccupato"], ["lo studente"]).tolist()
    [[1.0], [0.0]]
    """
    return np.array([[float(g.strip().casefold() == p.strip().casefold()) for p in preds] for g in golds]).reshape(len(golds), len(preds))


class BERTScoreSimilarity:
    """BERTScore F1 (no idf, no baseline rescaling) between expressions, from one scorer.

    The scorer is loaded on first use and kept; `precompute` scores many (gold, predicted)
    pairs in one batched call so that per-entry calls are cache look-ups.
    """

    def __init__(self, model_type: str = DEFAULT_MODEL, num_layers=None, batch_size: int = 64, device=None):
        if not isinstance(model_type, str) or not model_type.strip():
            raise ValueError(f"model_type must be a model name or a local path, got {model_type!r}")
        if num_layers is None:
            num_layers = DEFAULT_LAYERS.get(model_type, bert_score.utils.model2layers.get(model_type))
            if num_layers is None:
                raise ValueError(f"num_layers is required for model_type {model_type!r} (bert_score does not know its best layer)")
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.model_type, self.num_layers, self.batch_size, self.device = model_type, num_layers, batch_size, device
        self._scorer = None
        self._cache: dict[tuple[str, str], float] = {}

    def _load(self):
        if self._scorer is None:
            try:
                self._scorer = bert_score.BERTScorer(
                    model_type=self.model_type, num_layers=self.num_layers, batch_size=self.batch_size, device=self.device,
                    idf=False, rescale_with_baseline=False,
                )  # fmt: skip
            except AssertionError as error:  # bert_score checks num_layers with assert
                raise ValueError(f"model_type {self.model_type!r}: {error}") from None
        return self._scorer

    def precompute(self, pairs) -> None:
        """Score every (gold, predicted) pair not yet cached, in one batched BERTScore call."""
        todo = sorted({pair for pair in pairs if pair not in self._cache})
        if not todo:
            return
        golds, preds = [g for g, _ in todo], [p for _, p in todo]
        _, _, f1 = self._load().score(preds, golds, batch_size=self.batch_size)
        self._cache.update(zip(todo, (float(x) for x in f1.tolist())))

    def __call__(self, golds: list[str], preds: list[str]) -> np.ndarray:
        self.precompute([(g, p) for g in golds for p in preds])
        return np.array([[self._cache[(g, p)] for p in preds] for g in golds]).reshape(len(golds), len(preds))


def _validate(predictions, references, mode):
    if mode not in MODES:
        raise ValueError(f"mode must be 'paper' or 'calamita', not {mode!r}")
    if len(predictions) != len(references):
        raise ValueError(f"predictions ({len(predictions)}) and references ({len(references)}) differ in length")
    if len(predictions) == 0:
        raise ValueError("predictions is empty: nothing to score")
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        if not isinstance(prediction, str):
            raise ValueError(f"entry {i}: prediction must be a string (the raw model answer), not {type(prediction).__name__}")
        if isinstance(reference, str) or not isinstance(reference, (list, tuple)):
            raise ValueError(f"entry {i}: reference must be a list of gold expressions (strings), got {reference!r}")
        for item in reference:
            if not isinstance(item, str):
                raise ValueError(f"entry {i}: gold expressions must be strings, got {item!r}")


def compute_detection(predictions, references, similarity=None, mode=PAPER, return_per_entry=False,
                      model_type=DEFAULT_MODEL, num_layers=None, batch_size=64, device=None):  # fmt: skip
    """The whole metric on plain Python lists (what `evaluate`'s compute calls).

    `predictions` are raw model answers; `references` lists of gold expressions per entry
    ([] for none). `similarity(golds, preds)` returns the len(golds) x len(preds) score matrix;
    by default BERTScore F1 with `model_type` and `num_layers`, scored in one batch.
    """
    _validate(predictions, references, mode)
    if similarity is None:
        similarity = BERTScoreSimilarity(model_type, num_layers, batch_size=batch_size, device=device)
    if not callable(similarity):
        raise ValueError(f"similarity must be a callable (golds, preds) -> matrix, not {type(similarity).__name__}")
    # Gold items are stripped; empty ones dropped (the reference data has one: GFL-it entry 544).
    golds = [[item.strip() for item in map(canonical_text, reference) if item.strip()] for reference in references]
    preds = [parse_expressions(prediction) for prediction in predictions]
    if hasattr(similarity, "precompute"):
        similarity.precompute([(g, p) for gs, ps in zip(golds, preds) for g in gs for p in ps])
    per_entry = []
    for i, (gs, ps) in enumerate(zip(golds, preds)):
        scores = None
        if gs and ps:
            scores = np.asarray(similarity(gs, ps), dtype=float)
            if scores.shape != (len(gs), len(ps)) or not np.all(np.isfinite(scores)):
                raise ValueError(f"entry {i}: similarity must return a finite {len(gs)} x {len(ps)} matrix, got {scores.tolist()!r}")
        per_entry.append(score_entry(gs, ps, scores, mode=mode))
    return {
        "f1": float(math.fsum(per_entry) / len(per_entry)),
        "n": len(per_entry),
        "mode": mode,
        "model_type": getattr(similarity, "model_type", None),
        "num_layers": getattr(similarity, "num_layers", None),
        "per_entry_f1": per_entry if return_per_entry else None,
    }


_DESCRIPTION = """\
Gendered-language detection score of the CALAMITA 2024 Gender-Fair Generation (GFG) challenge,
task 1. The model lists the gendered expressions of an Italian sentence, separated by ";"
("0" for none). Per entry, gold and predicted expressions are compared with BERTScore F1 and
matched greedily one-to-one; the entry scores the sum of matched scores divided by the larger
of the two counts (mode "paper"). Mode "calamita" reproduces the leaderboard's recorded value:
1 when any gold/predicted pair has a positive score (in practice: the model named anything),
else 0. The final f1 is the mean over entries.
"""

_CITATION = """\
@inproceedings{frenda-etal-2024-gfg,
  title     = {{GFG} - Gender-Fair Generation: A {CALAMITA} Challenge},
  author    = {Frenda, Simona and Piergentili, Andrea and Savoldi, Beatrice and Madeddu, Marco and Rosola, Martina and Casola, Silvia and Ferrando, Chiara and Patti, Viviana and Negri, Matteo and Bentivogli, Luisa},
  booktitle = {Proceedings of the Tenth Italian Conference on Computational Linguistics (CLiC-it 2024)},
  year      = {2024},
  url       = {https://ceur-ws.org/Vol-3878/122_calamita_long.pdf}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: raw model answers (strings); the text after the last "]:" is read, split on
        ";" (or "," when there is no ";"); "0" or an empty answer means no expression.
    references: per entry, the list of gold expressions ([] when there is none; empty strings
        are dropped).
    model_type: BERTScore model, a Hub name or a local path (default bert-base-multilingual-cased).
    num_layers: the layer whose embeddings are used (default 9 for the default model; required
        for a model bert_score does not know, e.g. a local path).
    mode: "paper" (greedy one-to-one matching, default) or "calamita" (the leaderboard's 1/0).
    return_per_entry: also return the score of every entry.
    batch_size, device: passed to bert_score.
Returns:
    f1 (mean over entries), n, mode, model_type, num_layers, per_entry_f1 (None unless asked).
Examples:
    >>> metric = evaluate.load("gfg_detection")  # doctest: +SKIP
    >>> r = compute_detection(["La studentessa ; preoccupata", "gli studenti, i docenti", "0", "0"],
    ...                       [["La studentessa", "preoccupata"], ["gli studenti"], ["il rettore"], []],
    ...                       similarity=exact_match_similarity, return_per_entry=True)
    >>> r["per_entry_f1"], r["f1"]
    ([1.0, 0.5, 0.0, 1.0], 0.625)
    >>> compute_detection(["il rettore"], [["i docenti"]], similarity=lambda golds, preds: [[0.3]], mode="calamita")["f1"]
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class GfgDetection(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
            ),
            reference_urls=["https://ceur-ws.org/Vol-3878/122_calamita_long.pdf", "https://github.com/Tiiiger/bert_score"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the answers (see the arguments below)."""
        # Arrow would turn a number into a string, or fail without naming the entry: check first.
        if predictions is not None and references is not None:
            _validate(predictions, references, kwargs.get("mode", PAPER))
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, model_type=DEFAULT_MODEL, num_layers=None, mode=PAPER,
                 return_per_entry=False, batch_size=64, device=None):  # fmt: skip
        return compute_detection(
            predictions, [list(reference) for reference in references], mode=mode, return_per_entry=return_per_entry,
            model_type=model_type, num_layers=num_layers, batch_size=batch_size, device=device,
        )  # fmt: skip
