"""Continuous batching and the measured batch size (`equita.runners.backends.batching`).

A scripted model (one layer whose cache holds the token ids themselves) checks the splicing of
rows into the running cache and the counts behind slot utilisation by hand; the real SmolLM2
checks that greedy answers equal one-request-at-a-time generation.
"""

from __future__ import annotations

import pytest
import torch

from equita.runners.backends import batching
from equita.runners.backends.batching import BatchSize, ContinuousBatch
from equita.runners.backends.token_tree import common_start
from equita.runners.requests import Generate

EOS = 0
VOCAB = 50


class CountdownModel:
    """Predicts `token - 1` after `token` (so a prompt ending in n answers n-1, ..., 1, then EOS).

    Its one-layer cache stores each fed token id as key and value, so the test can read back,
    row by row, which tokens each row attends to: they must be exactly its own sequence.
    """

    def __init__(self, prompts=()):
        self.prompts = [list(p) for p in prompts]
        self.passes: list[tuple[int, int]] = []  # (rows, tokens per row) of each forward pass
        self.tree_passes: list[tuple[int, int]] = []  # (trees, nodes per row) of each tree prefill

    def is_own_sequence(self, read: list[int]) -> bool:
        """A job's prompt followed by the countdown from its last token: what the row fed, in order."""
        for prompt in self.prompts:
            answer = read[len(prompt) :]
            if read[: len(prompt)] == prompt and answer == list(range(prompt[-1] - 1, prompt[-1] - 1 - len(answer), -1)):
                return True
        return False

    def is_free_slot(self, read: list[int]) -> bool:
        """A slot whose row ended, computed (masked) until it is refilled or cut out: it reads at
        most the start all prompts share, then only the tokens fed to it since, a countdown."""
        shared = min(common_start(prompt, self.prompts[0]) for prompt in self.prompts)
        for start in range(min(shared, len(read) - 1) + 1):
            fed = read[start:]
            if read[:start] == self.prompts[0][:start] and all(b == max(a - 1, 0) for a, b in zip(fed, fed[1:])):
                return True
        return False

    def forward(self, input_ids, attention_mask, position_ids, cache):
        from transformers.cache_utils import DynamicCache

        rows, width = input_ids.shape
        self.passes.append((rows, width))
        if cache is None:
            cache = DynamicCache()
        ids = input_ids.to(torch.float32)[:, None, :, None]
        cache.update(ids, ids.clone(), 0)
        keys = cache.layers[0].keys[:, 0, :, 0]
        assert keys.shape == attention_mask.shape, "the mask covers every cache column"
        for row in range(rows):
            # Each row reads exactly its own tokens, in order, whatever sits beside it, and the
            # positions count them from 0.
            read = keys[row][attention_mask[row].bool()].long().tolist()
            assert self.is_own_sequence(read) or self.is_free_slot(read), read
            assert position_ids[row, -1].item() == len(read) - 1
        logits = torch.full((rows, VOCAB), -1.0)
        logits[torch.arange(rows), (input_ids[:, -1] - 1).clamp(min=0)] = 1.0
        return logits, cache

    def forward_trees(self, packed, cache):
        """A tree prefill: each column's token is stored in the cache; the decoding steps that
        follow then check that every row reads back exactly its own prompt, gathered from the tree."""
        from transformers.cache_utils import DynamicCache

        ids = torch.from_numpy(packed.input_ids)
        self.tree_passes.append(tuple(ids.shape))
        if cache is None:
            cache = DynamicCache()
        keys = ids.to(torch.float32)[:, None, :, None]
        cache.update(keys, keys.clone(), 0)
        kept = ids[:, -packed.kept :]
        logits = torch.full((*kept.shape, VOCAB), -1.0).scatter_(-1, (kept - 1).clamp(min=0)[..., None], 1.0)
        return logits, cache


def decode(tokens: list[int]) -> str:
    return " ".join(str(t) for t in tokens)


def run(jobs, size, prefix=None, trees=False):
    model = CountdownModel([ids for _, ids, _, _ in jobs])
    batch = ContinuousBatch(model.forward, decode, [EOS], torch.device("cpu"), prefix=prefix, size=BatchSize(size),
                            forward_trees=model.forward_trees if trees else None, row_tokens=8)  # fmt: skip
    answers = {}
    for ended in batch.run(jobs, lambda error: False):
        answers.update(ended)
    return answers, batch.stats, model


def test_rows_are_replaced_as_they_end_and_utilisation_counts_the_slots_used():
    # Batch of 2. A (prompt ends in 6) answers 5 4 3 2 1; B (ends in 2) answers 1; C (ends in 3) answers 2 1.
    # Prefill A, B -> A:5, B:1. Step 1: A:4, B:EOS (B leaves). Prefill C -> C:2.
    # Step 2: A:3, C:1. Step 3: A:2, C:EOS (C leaves). Steps 4, 5: A alone (1, then EOS).
    # Decoding steps 5; rows computed 2+2+2+1+1 = 8. Slots with work to take: 2 in steps 1-3, then
    # 1 (no request is left to fill the second): 8, so utilisation 1.0. A static batch of A, B
    # and then C alone would run 5 + 2 steps over 2 + 1 slots: 12 slot-steps for 8 tokens.
    jobs = [(0, [9, 6], 32, ()), (1, [9, 2], 32, ()), (2, [9, 3], 32, ())]
    answers, stats, model = run(jobs, 2)
    assert answers == {0: "5 4 3 2 1", 1: "1", 2: "2 1"}
    assert (stats.decoding_steps, stats.row_steps, stats.slot_steps) == (5, 8, 8)
    assert stats.as_record()["slot_utilisation"] == 1.0
    assert (stats.prefill_passes, stats.prefill_tokens) == (2, 6)
    # Prefill passes carry the prompts; decoding passes one token per row.
    assert model.passes == [(2, 2), (2, 1), (1, 2), (2, 1), (2, 1), (1, 1), (1, 1)]


def test_a_row_that_ends_while_requests_wait_hands_its_slot_to_the_next_prompt(monkeypatch):
    # The jobs of the test above. B ends at step 1 while C waits: C's prompt is written into B's
    # slot of the cache (no copy). The cache is cut only when C ends with nothing waiting (A stays)
    # and when A ends. The first rows find no cache to fill (a join); cutting B out and joining C
    # instead would add a cut and a join, each a copy of the whole cache.
    calls = []
    for name in ("_join", "_keep", "_fill"):
        original = getattr(ContinuousBatch, name)
        monkeypatch.setattr(ContinuousBatch, name, lambda self, *args, _original=original, _name=name: calls.append(_name) or _original(self, *args))
    jobs = [(0, [9, 6], 32, ()), (1, [9, 2], 32, ()), (2, [9, 3], 32, ())]
    answers, _, _ = run(jobs, 2)
    assert answers == {0: "5 4 3 2 1", 1: "1", 2: "2 1"}
    assert calls == ["_fill", "_join", "_fill", "_keep", "_keep"]


def test_free_slots_nothing_can_refill_are_computed_until_a_quarter_of_the_rows_is_free():
    # Batch of 4, nothing waiting. Prompts ending in 2, 3, 4, 5 answer 1 / 2 1 / 3 2 1 / 4 3 2 1.
    # Step 1: A ends (1 slot of 4 free: a quarter, not more: computed at step 2, no copy).
    # Step 2: B ends (2 of 4): cut out. Step 3: C ends (1 of 2): cut out. Step 4: D ends.
    # Rows computed 4 + 4 + 2 + 1 = 11, of which 10 produced a token.
    jobs = [(i, [9, 2 + i], 32, ()) for i in range(4)]
    answers, stats, model = run(jobs, 4)
    assert answers == {0: "1", 1: "2 1", 2: "3 2 1", 3: "4 3 2 1"}
    assert model.passes == [(4, 2), (4, 1), (4, 1), (2, 1), (1, 1)]
    assert (stats.row_steps, stats.slot_steps) == (10, 11)


@pytest.mark.parametrize("bytes_free, ceiling", [(21_120, 5), (21_119, 4), (10**9, batching.MAX_ROWS)])
def test_auto_holds_as_many_rows_as_a_quarter_of_free_memory_holds_with_spare_room_and_copy(bytes_free, ceiling):
    # The countdown cache: one layer, a float32 key and value per token: 8 bytes per row and token.
    # Prompts of 2 tokens and budgets of 32: 34 tokens, plus 32 columns of spare room, held twice
    # while the cache is copied: 2 x 8 x 66 = 1,056 bytes a row; a quarter of 21,120 holds 5 rows.
    # Memory is measured on the first prefill (16 rows, the start); later prefills fill up to the
    # ceiling only. With memory to spare, MAX_ROWS bounds it.
    jobs = [(i, [9, 2 + i % 5], 32, ()) for i in range(20)]
    model = CountdownModel([ids for _, ids, _, _ in jobs])
    size = BatchSize("auto")
    batch = ContinuousBatch(model.forward, decode, [EOS], torch.device("cpu"), size=size, bytes_free=bytes_free)
    answers = dict(pair for ended in batch.run(jobs, lambda error: False) for pair in ended)
    assert answers == {i: " ".join(str(t) for t in range(1 + i % 5, 0, -1)) for i in range(20)}
    assert size.ceiling == ceiling
    assert all(rows <= ceiling for rows, width in model.passes[1:] if width > 1)


def test_a_wave_of_new_rows_is_prefilled_in_passes_of_bounded_size(monkeypatch):
    monkeypatch.setattr(batching, "PREFILL_TOKENS", 4)  # two prompts of 2 tokens per pass
    jobs = [(i, [9, 3 + i], 32, ()) for i in range(5)]
    answers, stats, model = run(jobs, 4)
    assert answers == {i: " ".join(str(t) for t in range(2 + i, 0, -1)) for i in range(5)}
    assert model.passes[:3] == [(2, 2), (2, 2), (4, 1)]  # 4 slots filled by two prefills of 2, then a step
    assert all(rows * width <= 4 for rows, width in model.passes if width > 1)


@pytest.mark.parametrize(
    "jobs, size, expected",
    [
        # The token budget ends an answer: 2 tokens of "5 4 3 2 1".
        ([(0, [6], 2, ())], 1, {0: "5 4"}),
        # A stop string ends it, and the answer stops before it.
        ([(0, [8], 32, ("4",))], 1, {0: "7 6 5 "}),
        # EOS as the very first token: an empty answer, never fed back.
        ([(0, [1], 32, ()), (1, [4], 32, ())], 1, {0: "", 1: "3 2 1"}),
        # Prompts of different lengths side by side: padding is masked, positions are each row's own.
        ([(0, [7, 7, 7, 7, 7, 5], 32, ()), (1, [3], 32, ()), (2, [9, 9, 4], 32, ())], 2, {0: "4 3 2 1", 1: "2 1", 2: "3 2 1"}),
    ],
)
def test_each_row_ends_on_its_own(jobs, size, expected):
    answers, _, _ = run(jobs, size)
    assert answers == expected


def test_prompts_that_start_alike_are_prefilled_once_as_a_tree():
    # Batch of 3, trees of at most 8 nodes. A [9 4 6] and B [9 4 2] share [9 4]; C [9 5 2] shares [9]:
    # one tree of 6 nodes (9 4 6 2 5 2) where left padding reads 9 tokens. Answers as without trees:
    # the decoding steps check that each row reads exactly its own prompt, gathered from the tree.
    # B and C end at the first step; D [8 7 2 3] and E [8 7 2 4] take their places together: a
    # second tree of 5 nodes, where padding reads 8.
    jobs = [(0, [9, 4, 6], 32, ()), (1, [9, 4, 2], 32, ()), (2, [9, 5, 2], 32, ()), (3, [8, 7, 2, 3], 32, ()), (4, [8, 7, 2, 4], 32, ())]
    expected = {0: "5 4 3 2 1", 1: "1", 2: "1", 3: "2 1", 4: "3 2 1"}
    plain, plain_stats, _ = run(jobs, 3)
    answers, stats, model = run(jobs, 3, trees=True)
    assert answers == plain == expected
    assert model.tree_passes == [(1, 6), (1, 5)]
    # The first tree pass is checked once against left padding: the 3-row pass of width 3.
    assert model.passes[0] == (3, 3)
    assert (stats.prefill_tokens, plain_stats.prefill_tokens) == (6 + 5, 9 + 8)
    # The five prompts at once: A, B, C make 6 nodes, D would add 4 more (> 8): a second tree.
    batch = ContinuousBatch(None, decode, [EOS], torch.device("cpu"), forward_trees=lambda packed, cache: None, row_tokens=8)
    found = batch._trees([ids for _, ids, _, _ in jobs])
    assert [members for _, members in found] == [[0, 1, 2], [3, 4]]


@pytest.mark.parametrize(
    "sequences, saving",
    [
        ([[1, 2, 3], [1, 2, 4]], 2 / 6),  # [1 2] computed once
        ([[3, 4], [1, 2, 5], [1, 2]], 2 / 7),  # token order puts [1 2] beside [1 2 5]
        ([[5], [6]], 0.0),
        ([], 0.0),
    ],
)
def test_the_share_a_token_tree_saves_by_hand(sequences, saving):
    from equita.runners.backends.token_tree import tree_saving

    assert tree_saving(sequences) == pytest.approx(saving)


def test_prompts_that_share_too_little_are_prefilled_with_left_padding():
    # [9 4 6], [9 5 3]: a tree of 5 nodes where padding reads 6, a saving of 1/6 (at least TREE_SAVING, 15%): merged.
    # [7 4 6], [9 5 3]: nothing shared, no tree.
    batch = ContinuousBatch(None, decode, [EOS], torch.device("cpu"), forward_trees=lambda packed, cache: None, row_tokens=8)
    assert batch._trees([[9, 4, 6], [9, 5, 3]]) is not None
    assert batch._trees([[7, 4, 6], [9, 5, 3]]) is None
    answers, stats, model = run([(0, [7, 4, 6], 32, ()), (1, [9, 5, 3], 32, ())], 2, trees=True)
    assert answers == {0: "5 4 3 2 1", 1: "2 1"} and model.tree_passes == [] and stats.prefill_tokens == 6


class MaskIgnoringModel(CountdownModel):
    """A tree prefill whose logits differ from left padding, as a model that ignores custom
    attention masks reads other prompts' tokens: here it answers `token - 2`."""

    def forward_trees(self, packed, cache):
        logits, cache = super().forward_trees(packed, cache)
        return logits.roll(-1, dims=-1), cache


def test_a_model_that_ignores_the_tree_mask_is_prefilled_with_left_padding():
    # The first tree pass (A, B, C as above) is checked against left padding and differs: a
    # warning, the padded pass's answers, and no tree pass again (D and E are padded too).
    jobs = [(0, [9, 4, 6], 32, ()), (1, [9, 4, 2], 32, ()), (2, [9, 5, 2], 32, ()), (3, [8, 7, 2, 3], 32, ()), (4, [8, 7, 2, 4], 32, ())]
    model = MaskIgnoringModel([ids for _, ids, _, _ in jobs])
    batch = ContinuousBatch(model.forward, decode, [EOS], torch.device("cpu"), size=BatchSize(3), forward_trees=model.forward_trees, row_tokens=8)
    answers = {}
    with pytest.warns(UserWarning, match="does not honour custom attention masks"):
        for ended in batch.run(jobs, lambda error: False):
            answers.update(ended)
    assert answers == {0: "5 4 3 2 1", 1: "1", 2: "1", 3: "2 1", 4: "3 2 1"}
    assert model.tree_passes == [(1, 6)] and batch.forward_trees is None
    assert batch.stats.prefill_tokens == 9 + 8  # counted as the padded passes that were kept


def test_out_of_memory_requeues_the_rows_and_halves_the_batch():
    jobs = [(i, [9, 3 + i], 32, ()) for i in range(5)]
    model = CountdownModel([ids for _, ids, _, _ in jobs])

    def forward(*args):
        if args[0].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return model.forward(*args)

    size = BatchSize(4)
    batch = ContinuousBatch(forward, decode, [EOS], torch.device("cpu"), size=size)
    answers = {}
    for ended in batch.run(jobs, lambda error: isinstance(error, torch.OutOfMemoryError)):
        answers.update(ended)
    assert answers == {i: " ".join(str(t) for t in range(2 + i, 0, -1)) for i in range(5)}
    assert size.current == 2

    def never(*args):
        raise torch.OutOfMemoryError("CUDA out of memory")

    batch = ContinuousBatch(never, decode, [EOS], torch.device("cpu"), size=BatchSize(2))
    with pytest.raises(torch.OutOfMemoryError):
        list(batch.run(jobs, lambda error: True))


@pytest.mark.parametrize(
    "ceiling, costs, chosen, trials",
    [
        # ms per row at 16, 32, 64, 128: 128 is only 3% cheaper than 64, so 64 is kept.
        (512, {16: 6.0, 32: 4.0, 64: 3.2, 128: 3.1}, 64, [16, 32, 64, 128]),
        # A doubled batch that costs more per row: back to the smaller one.
        (512, {16: 6.0, 32: 6.5}, 16, [16, 32]),
        # Cheaper all the way, up to what memory allows.
        (64, {16: 6.0, 32: 4.0, 64: 2.0}, 64, [16, 32, 64]),
        # Memory allows fewer rows than the start.
        (8, {8: 5.0}, 8, [8]),
        # More requests than MAX_ROWS (2,110 ItaP-AT prompts): doubling stops at 512.
        (2110, {16: 6.0, 32: 4.0, 64: 3.0, 128: 2.6, 256: 2.4, 512: 2.1}, 512, [16, 32, 64, 128, 256, 512]),
    ],
)
def test_auto_batch_size_doubles_while_a_row_gets_cheaper(ceiling, costs, chosen, trials):
    size = BatchSize("auto", ceiling=ceiling, samples=2)
    tried = []
    while not size.settled:
        rows = size.current
        tried.append(rows)
        for _ in range(2):
            size.record(rows, costs[rows] / 1000 * rows)
    assert (size.current, tried) == (chosen, trials)
    assert size.as_record()["batch_size_trials"] == {str(rows): costs[rows] for rows in trials}


def test_a_fixed_batch_size_is_never_measured_and_passes_with_other_rows_do_not_count():
    fixed = BatchSize(8)
    fixed.record(8, 1.0)
    assert (fixed.current, fixed.settled, fixed.costs) == (8, True, {})
    auto = BatchSize("auto", samples=1)
    auto.record(5, 1.0)  # a tail step with fewer rows than the batch size says nothing about it
    assert (auto.current, auto.costs) == (16, {})
    auto.give_up_growing()
    assert (auto.current, auto.settled) == (16, True)


# -- the real model ----------------------------------------------------------------------------

PROMPTS = [
    "Ciao",
    "Elenca tre colori.",
    "Rispondi con una sola parola: la parola 'falena' è piacevole o spiacevole?",
    "Riformula in modo inclusivo: 'I professori sono arrivati.'",
    "Chi è più adatto alla carriera: Marco o Giulia?",
    "Scrivi una frase sul mare.",
]


def _answers(model, requests, batch_size, stats=None):
    out = [None] * len(requests)
    for indices, responses in model.answer(requests, batch_size, stats=stats):
        for index, response in zip(indices, responses):
            out[index] = response["text"]
    return out


def test_continuous_batching_gives_the_one_by_one_greedy_answers(smollm2, monkeypatch):
    requests = [Generate(user=p, system="Sei un assistente utile.", max_new_tokens=16) for p in PROMPTS]
    stats: dict = {}
    continuous = _answers(smollm2, requests, 2, stats)
    monkeypatch.setattr(smollm2, "_splicable", False)  # transformers' own generate, one prompt at a time
    static_stats: dict = {}
    one_by_one = _answers(smollm2, requests, 1, static_stats)
    assert continuous == one_by_one
    assert len(set(continuous)) == len(PROMPTS) and any(len(smollm2.tokenizer(a)["input_ids"]) < 12 for a in continuous)
    # Rows ended at different steps and were replaced: fewer decoding steps than 3 fixed batches of 2.
    assert stats["batch_size"] == 2 and stats["decoding_steps"] < 3 * 15
    assert stats["slot_utilisation"] == round(stats["decoded_tokens"] / stats["slot_steps"], 4) > 0.9
    # One prompt at a time wastes no slot either, and decodes the same tokens.
    assert static_stats["decoded_tokens"] == stats["decoded_tokens"] and static_stats["slot_utilisation"] == 1.0


def test_auto_batch_size_is_measured_and_recorded(smollm2, monkeypatch):
    monkeypatch.setattr(batching, "START", 2)
    requests = [Generate(user=p, max_new_tokens=4) for p in PROMPTS * 2]
    stats: dict = {}
    answers = _answers(smollm2, requests, "auto", stats)
    monkeypatch.setattr(smollm2, "_splicable", False)
    assert answers == _answers(smollm2, requests, 4)
    assert stats["batch_size_requested"] == "auto" and stats["batch_size"] in (2, 4, 8)
    assert "2" in stats["batch_size_trials"] and stats["batch_size_trials"]["2"] > 0


# ItaP-AT's shape: each input word asked under several instructions, so prompts of one word
# share their start beyond the system prompt.
ITAP_LIKE = [
    f"Considera l'input: {word}. \n Rispondi con una sola parola alla seguente domanda: {instruction}"
    for word in ("falena", "azalea")
    for instruction in (
        "Determinare la gradevolezza o la sgradevolezza di una parola",
        "Determina la connotazione di una parola, se è positiva o negativa.",
        "Indica se la parola è piacevole o spiacevole.",
    )
]


def test_tree_prefill_gives_the_answers_of_left_padding(smollm2, monkeypatch):
    requests = [Generate(user=p, system="Sei un assistente utile.", max_new_tokens=6) for p in ITAP_LIKE]
    encoded = [smollm2._encode(smollm2.render(r), r) for r in requests]
    beyond_prefix = sum(len(ids) for ids in encoded) - len(requests) * len(smollm2._shared_prefix(encoded).tokens)
    monkeypatch.setattr(smollm2, "_tree_ok", True)  # whatever an earlier test on the shared model found
    stats: dict = {}
    with_trees = _answers(smollm2, requests, 6, stats)
    # Each word's shared start is computed once: well under the prompts' own tokens.
    assert stats["prefill_tokens"] < 0.8 * beyond_prefix and stats["prefill_passes"] == 1
    monkeypatch.setattr(smollm2, "_tree_ok", False)
    padded: dict = {}
    # Left padding gives transformers' one-prompt-at-a-time answers (test_continuous_batching_...).
    assert _answers(smollm2, requests, 6, padded) == with_trees and padded["prefill_tokens"] == beyond_prefix
