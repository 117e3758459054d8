"""The same answer, however it is encoded, gets the same score (issue 15): NFC and NFD, invisible
format characters, full-width letters. neogate and itap_at_bias read text the same way."""

from __future__ import annotations

import unicodedata

import pytest

from conftest import load_metric_module

neogate = load_metric_module("neogate")
itap = load_metric_module("itap_at_bias")

VARIANTS = [
    ("NFD", lambda t: unicodedata.normalize("NFD", t)),
    ("zero-width space", lambda t: t.replace("ù", "ù\u200b", 1).replace("v", "\u200bv", 1)),
    ("soft hyphen", lambda t: t.replace("bra", "bra\u00ad", 1)),
    ("direction marks", lambda t: "\u200f" + t + "\u200e"),
    ("byte-order mark", lambda t: "\ufeff" + t),
    ("full-width letters", lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t)),
]  # fmt: skip


@pytest.mark.parametrize("case, variant", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_neogate_scores_every_encoding_of_an_answer_alike(case, variant):
    reference = "il la lə bravə=2;bravo brava bravə;"  # the article and the adjective, both neutral
    plain = neogate.compute_neogate(["Lə più bravə."], [reference])
    changed = neogate.compute_neogate([variant("Lə più bravə.")], [reference])
    assert plain["cwa"] == 100.0
    assert (changed["cwa"], changed["misgeneration"], changed["coverage"]) == (plain["cwa"], plain["misgeneration"], plain["coverage"])


@pytest.mark.parametrize("case, variant", VARIANTS, ids=[v[0] for v in VARIANTS])
@pytest.mark.parametrize("answer, label", [("Più piacevole.", "stereotype"), ("Non è piacevole.", "anti_stereotype"), ("Spiacevole", "anti_stereotype")])
def test_itap_classifier_reads_every_encoding_of_an_answer_alike(case, variant, answer, label):
    assert itap.classify_answer(answer, "piacevole", "spiacevole").label == label
    assert itap.classify_answer(variant(answer), "piacevole", "spiacevole").label == label


def test_neogate_reads_a_decomposed_annotation_like_a_composed_one():
    reference = "il la lə bravə=2;bravo brava bravə;"
    assert neogate.compute_neogate(["Lə più bravə."], [unicodedata.normalize("NFD", reference)])["cwa"] == 100.0


gfg = load_metric_module("gfg_detection")
gente = load_metric_module("gente_neutrality")
SAMPLE = "Gli studenti più bravi, però, ＡＢＣ\u200b e\u00ad basta\ufeff"


def test_every_metric_reads_the_same_canonical_text():
    # The function lives in each self-contained module; they must agree character for character.
    expected = neogate.canonical_text(unicodedata.normalize("NFD", SAMPLE))
    assert expected == "Gli studenti più bravi, però, ABC e basta"
    for module in (gfg, gente):
        assert module.canonical_text(unicodedata.normalize("NFD", SAMPLE)) == expected


@pytest.mark.parametrize("case, variant", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_gfg_detection_scores_every_encoding_of_an_answer_alike(case, variant):
    # Exact-match similarity: 1 only for identical strings, so any leftover invisible character shows.
    answer, gold = "[Espressione]: gli studenti più bravi", ["gli studenti più bravi"]
    plain = gfg.compute_detection([answer], [gold], similarity=gfg.exact_match_similarity)
    changed = gfg.compute_detection([variant(answer)], [[variant(gold[0])]], similarity=gfg.exact_match_similarity)
    assert plain["f1"] == 1.0
    assert changed["f1"] == plain["f1"]


@pytest.mark.parametrize("case, variant", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_gente_neutrality_classifies_canonical_text(case, variant):
    seen = []

    def classify(texts):
        seen.extend(texts)
        return ["neutral" if text == "La comunità studentesca è più brava." else "gendered" for text in texts]

    result = gente.compute_accuracy([variant("La comunità studentesca è più brava.")], ["neutral"], classify)
    assert seen == ["La comunità studentesca è più brava."]
    assert result["accuracy"] == 100.0
