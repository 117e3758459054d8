"""GeNTE neutrality accuracy (CALAMITA 2024 Gender-Fair Generation, tasks 2 and 3).

A classifier labels each model output gender-neutral or gendered; the score is the
percentage of outputs whose label is the expected one (always neutral for reformulation;
gendered for GeNTE Set-G and neutral for Set-N in translation). Self-contained: a Hub Space
serves this one file. Pure functions first, the thin `evaluate` class last.
"""

import numbers
import unicodedata

import datasets
import evaluate

NEUTRAL = "neutral"
GENDERED = "gendered"
LABELS = (NEUTRAL, GENDERED)
# The official classifier (Savoldi et al. 2024, version 2 of Piergentili et al. 2023's):
# a CamemBERT-style model whose class 0 is neutral and class 1 gendered, read with UmBERTo's
# tokenizer and inputs cut at 64 tokens.
DEFAULT_MODEL = "FBK-MT/GeNTE-evaluator"
DEFAULT_TOKENIZER = "Musixmatch/umberto-commoncrawl-cased-v1"
DEFAULT_MAX_LENGTH = 64

FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}  # ＡＢＣ！ -> ABC!


def canonical_text(text: str) -> str:
    """NFC, format characters removed (zero-width space, soft hyphen, direction marks, BOM),
    full-width ASCII as ASCII: the canonical text every equita metric reads (the module is
    self-contained for its Hub Space, so the five lines live in each metric; test_metric_text_normalisation
    checks they agree)."""
    text = unicodedata.normalize("NFC", text).translate(FULL_WIDTH)
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _check(predictions, references):
    if len(predictions) != len(references):
        raise ValueError(f"predictions ({len(predictions)}) and references ({len(references)}) differ in length")
    if len(predictions) == 0:
        raise ValueError("predictions is empty: nothing to score")
    for i, (text, expected) in enumerate(zip(predictions, references)):
        if not isinstance(text, str):
            raise ValueError(f"entry {i}: prediction must be a string (the model output), got {type(text).__name__}")
        if expected not in LABELS:
            raise ValueError(f"entry {i}: reference must be 'neutral' or 'gendered', got {expected!r}")


def score_labels(labels, references, return_labels=False):
    """Accuracy (percentage, the paper's scale) of classifier labels against expected labels, overall and per expected label."""
    for i, label in enumerate(labels):
        if label not in LABELS:
            raise ValueError(f"entry {i}: classifier label must be 'neutral' or 'gendered', got {label!r}")
    correct = [label == expected for label, expected in zip(labels, references)]
    by_expected = {}
    for expected in LABELS:
        rows = [ok for ok, e in zip(correct, references) if e == expected]
        by_expected[expected] = {"accuracy": 100.0 * sum(rows) / len(rows) if rows else None, "n": len(rows)}
    return {
        "accuracy": 100.0 * sum(correct) / len(correct),
        "n": len(correct),
        "n_correct": sum(correct),
        "by_expected": by_expected,
        "predicted_neutral": 100.0 * sum(label == NEUTRAL for label in labels) / len(labels),
        "labels": list(labels) if return_labels else None,
    }


def load_classifier(model=DEFAULT_MODEL, tokenizer=DEFAULT_TOKENIZER, max_length=DEFAULT_MAX_LENGTH, batch_size=32, device=None):
    """A function texts -> labels running a sequence classifier (class 0 neutral, 1 gendered), batched."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        tokenize = AutoTokenizer.from_pretrained(tokenizer)
        classifier = AutoModelForSequenceClassification.from_pretrained(model)
    except OSError as error:
        raise OSError(
            f"cannot load the neutrality classifier (model {model!r}, tokenizer {tokenizer!r}): {error}. "
            "Offline, pass model= and tokenizer= local paths"
        ) from None
    if classifier.config.num_labels != 2:
        raise ValueError(f"classifier {model!r} has {classifier.config.num_labels} labels; GeNTE's has 2 (0 neutral, 1 gendered)")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    classifier.to(device).eval()

    def classify(texts):
        labels = []
        for start in range(0, len(texts), batch_size):
            batch = tokenize(list(texts[start : start + batch_size]), truncation=True, max_length=max_length, padding=True, return_tensors="pt")
            if batch["input_ids"].shape[1] == 0:
                # Only empty outputs, and a tokenizer that adds no special tokens (UmBERTo adds <s> </s>):
                # the classifier reads one padding token for each, as it reads an empty output elsewhere.
                filler = tokenize.pad_token_id if tokenize.pad_token_id is not None else (tokenize.unk_token_id or 0)
                batch = {name: torch.full((len(batch["input_ids"]), 1), filler if name == "input_ids" else 1 if name == "attention_mask" else 0)
                         for name in batch}  # fmt: skip
            with torch.inference_mode():
                logits = classifier(**{k: v.to(device) for k, v in batch.items()}).logits
            labels.extend(LABELS[int(i)] for i in logits.argmax(-1).tolist())
        return labels

    return classify


def compute_accuracy(predictions, references, classify, return_labels=False):
    """The whole metric with any classifier function (texts -> 'neutral'/'gendered' labels)."""
    _check(predictions, references)
    # The classifier reads canonical text: an invisible character or NFD must not change a label.
    labels = list(classify([canonical_text(text) for text in predictions]))
    if len(labels) != len(predictions):
        raise ValueError(f"the classifier returned {len(labels)} labels for {len(predictions)} outputs")
    return score_labels(labels, list(references), return_labels=return_labels)


_DESCRIPTION = """\
GeNTE neutrality accuracy (CALAMITA 2024 Gender-Fair Generation): a neutral/gendered classifier
labels each model output, and the score is the percentage of outputs whose label matches the
expected one (neutral for fair reformulation; gendered for GeNTE Set-G and neutral for Set-N in
fair translation). Default classifier: FBK-MT/GeNTE-evaluator with UmBERTo's tokenizer, inputs
cut at 64 tokens; any local classifier with two classes (0 neutral, 1 gendered) can be used.
"""

_CITATION = """\
@inproceedings{frenda-etal-2024-gfg,
  title     = {{GFG} - Gender-Fair Generation: A {CALAMITA} Challenge},
  author    = {Frenda, Simona and Piergentili, Andrea and Savoldi, Beatrice and Madeddu, Marco and Rosola, Martina and Casola, Silvia and Ferrando, Chiara and Patti, Viviana and Negri, Matteo and Bentivogli, Luisa},
  booktitle = {Proceedings of the Tenth Italian Conference on Computational Linguistics (CLiC-it 2024)},
  year      = {2024}
}
@inproceedings{piergentili-etal-2023-hi,
  title     = {Hi Guys or Hi Folks? Benchmarking Gender-Neutral Machine Translation with the {GeNTE} Corpus},
  author    = {Piergentili, Andrea and Savoldi, Beatrice and Fucci, Dennis and Negri, Matteo and Bentivogli, Luisa},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing},
  year      = {2023}
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: model outputs (strings).
    references: expected label per output, "neutral" or "gendered".
    model: classifier name or local path (default FBK-MT/GeNTE-evaluator).
    tokenizer: tokenizer name or local path (default Musixmatch/umberto-commoncrawl-cased-v1).
    max_length: tokens kept per output (default 64), batch_size: outputs per forward pass.
    return_labels: also return the classifier's label for each output.
Returns:
    accuracy (percentage of correct labels), n, n_correct, by_expected ({"neutral": {accuracy, n},
    "gendered": {...}}; accuracy None when no output expects that label), predicted_neutral
    (percentage of outputs labelled neutral), labels (None unless asked), model, tokenizer.
Examples:
    >>> r = score_labels(["neutral", "gendered", "neutral", "neutral"], ["neutral", "neutral", "gendered", "neutral"])
    >>> r["accuracy"], r["n_correct"], r["by_expected"]["neutral"]["accuracy"], r["by_expected"]["gendered"]
    (50.0, 2, 66.66666666666667, {'accuracy': 0.0, 'n': 1})
    >>> always_neutral = lambda texts: ["neutral"] * len(texts)
    >>> compute_accuracy(["La persona che insegna", "Il professore"], ["neutral", "gendered"], always_neutral)["accuracy"]
    50.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class GenteNeutrality(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            reference_urls=["https://huggingface.co/FBK-MT/GeNTE-evaluator", "https://huggingface.co/datasets/FBK-MT/GeNTE"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the outputs (see the arguments below)."""
        # evaluate converts values to the declared string type silently; check them as given.
        if predictions is not None and references is not None:
            _check(list(predictions), list(references))
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, model=DEFAULT_MODEL, tokenizer=DEFAULT_TOKENIZER, max_length=DEFAULT_MAX_LENGTH,
                 batch_size=32, return_labels=False):  # fmt: skip
        if not isinstance(max_length, numbers.Integral) or max_length < 1:
            raise ValueError(f"max_length must be a positive int, got {max_length!r}")
        classify = load_classifier(model, tokenizer, max_length=max_length, batch_size=batch_size)
        result = compute_accuracy(predictions, references, classify, return_labels=return_labels)
        return {**result, "model": model, "tokenizer": tokenizer}
