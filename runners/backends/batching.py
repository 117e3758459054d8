"""Continuous batching of greedy generation, and batch sizes chosen by measurement.

A static batch decodes until its longest answer ends: rows whose answer ended early keep
computing padding. Here a row that ends (an end-of-turn token, a stop string, its token budget)
leaves the batch at once and the next request takes its place, its prompt prefilled beside the
running batch and spliced into the key/value cache. Rows are laid out as

    [shared prefix][padding][prompt + answer so far]

so every row's newest token sits in the last column: one decoding step is one forward pass over
one token per row, whatever the rows' lengths. Padding is masked out, positions count each
row's own tokens, so each row computes what it would compute alone (greedy answers equal
one-request-at-a-time generation). Columns no row reads any more are dropped whenever the
batch's rows change.

`BatchSize` picks the number of rows: a fixed number, or `auto`, which starts at START and
doubles while the measured cost per row of a step (decoding) or per request (scoring) falls by
at least GAIN, up to what memory allows.
"""

from __future__ import annotations

import os
import statistics
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from .token_tree import TokenTree, common_start, pack_trees, token_tree

START = 16
MAX_ROWS = 512
# A doubled batch is kept only when it serves a row at least this much cheaper; below that, the
# extra memory (and a longer wait for the first answers) buys nothing. At 10%, three noisy steps
# on a shared 2-core machine stopped ItaP-AT at 32 rows (4.16 against 3.86 ms per row at 64, 7%)
# where 128 rows cost 3.02 in another run: 5% lets a real gain through.
GAIN = 0.05
# Share of the free memory the key/value cache may take at its peak: each row's longest prompt and
# answer plus the buffer's spare room, held twice while the cache is copied (rows join or leave).
# Counted so, ItaP-AT stops at 256 rows here (3.6 GB, 2.2 ms a row-step) where it reached 512
# (6 GB, 2.15 ms) and, before MAX_ROWS bound it, 1,024 (9.5 GB).
MEMORY_SHARE = 0.25
# Prompt tokens (rows x padded width) one prefill pass may take; more rows wait for the next pass.
# A pass's new rows are held whole beside the running cache until they are written into it, so
# this bounds the extra memory of a wave of rows ending together. At 8,192 that wave put equita
# above lm-eval at 64 rows of ItaP-AT (1.86-1.88 GB against 1.78); at 1,024, 1.57-1.64 GB, and
# prefill was no slower (1,000 prompts at 256 rows: 79 s in 100 passes against 107 s in 53).
PREFILL_TOKENS = 1024
# Rows that ended leave free slots, refilled by waiting requests. Where none can refill them (the
# last requests, or a batch above the size auto settled on), a step computes them, masked, until
# they are this share of the rows: cutting them out copies the whole cache, which at 512 rows of
# ItaP-AT cost as much as three steps, and was done at almost every step.
FREE_SLOTS = 0.25
# Leading cache columns no row reads any more are cut out once there are more than this (and a
# quarter of the columns): each cut copies the cache.
DEAD_COLUMNS = 32
# Tree prefill is used only when merging the new prompts saves at least this share of their tokens
# (a tree row's dense attention mask costs more than left padding's).
TREE_SAVING = 0.15


def free_memory(device: torch.device) -> int:
    """Bytes free on `device`: CUDA's own count, or the kernel's available memory for the CPU."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not Linux: assume 4 GiB
        return 4 << 30


@dataclass
class BatchSize:
    """The batch size in force: fixed, or searched by doubling while the cost per row falls.

    `record(rows, seconds)` is called after each timed forward pass (a decoding step, a scoring
    batch); only passes with exactly `current` rows count. After `samples` of them the median
    cost per row decides: keep doubling, or settle on the cheapest size seen.
    """

    requested: int | str
    ceiling: int = MAX_ROWS
    samples: int = 3
    current: int = 0
    settled: bool = False
    costs: dict[int, float] = field(default_factory=dict)  # rows -> median seconds per row
    _timings: list[float] = field(default_factory=list)

    def __post_init__(self):
        # MAX_ROWS bounds auto whatever the caller's ceiling (the requests there are): at 1,024
        # rows of ItaP-AT a step was no cheaper per row than at 512, and the trial alone took the
        # process to 9.5 GB.
        self.ceiling = max(1, min(self.ceiling, MAX_ROWS))
        if self.requested == "auto":
            self.current = min(START, self.ceiling)
        else:
            self.current, self.settled = int(self.requested), True

    @property
    def auto(self) -> bool:
        return self.requested == "auto"

    def limit(self, ceiling: int) -> None:
        """Lower the ceiling (memory, the requests left); never below one row."""
        self.ceiling = max(1, min(self.ceiling, ceiling))
        if self.auto and self.current > self.ceiling:
            self.current = self.ceiling

    def record(self, rows: int, seconds: float) -> None:
        if self.settled or rows != self.current:
            return
        self._timings.append(seconds / rows)
        if len(self._timings) < self.samples:
            return
        cost, self._timings = statistics.median(self._timings), []
        best = min(self.costs, key=self.costs.get) if self.costs else None
        self.costs[rows] = cost
        if best is not None and cost > self.costs[best] * (1 - GAIN):
            self.current, self.settled = best, True
        elif rows * 2 <= self.ceiling:
            self.current = rows * 2
        else:
            self.settled = True

    def give_up_growing(self) -> None:
        """Not enough work left to fill a larger batch: settle on the cheapest size measured."""
        if not self.settled and self.costs:
            self.current = min(self.costs, key=self.costs.get)
        self.settled = True

    def halve(self) -> None:
        """Out of memory at `current` rows: half as many, and no growing back."""
        self.current = max(1, self.current // 2)
        self.ceiling = self.current
        self.settled = True

    def as_record(self) -> dict:
        return {
            "batch_size": self.current,
            "batch_size_requested": self.requested,
            "batch_size_trials": {str(rows): round(cost * 1000, 3) for rows, cost in self.costs.items()},  # ms per row
        }


@dataclass
class Row:
    """One request in the running batch."""

    index: int  # its position in the caller's list
    budget: int
    stop: tuple[str, ...]
    tokens: list[int] = field(default_factory=list)
    text: str = ""


@dataclass
class DecodingStats:
    decoding_steps: int = 0
    row_steps: int = 0  # rows computed, summed over decoding steps (each produced one kept token)
    # Slots that had work to take, summed over decoding steps: the batch size in force, or the
    # requests not yet answered when fewer are left (the last rows of a run cannot be replaced).
    slot_steps: int = 0
    prefill_passes: int = 0
    prefill_tokens: int = 0  # tokens computed: a tree prefill counts each shared start once
    prefill_s: float = 0.0
    decoding_s: float = 0.0

    def as_record(self) -> dict:
        return {
            "decoding_steps": self.decoding_steps,
            "decoded_tokens": self.row_steps,
            "slot_steps": self.slot_steps,
            "prefill_passes": self.prefill_passes,
            "prefill_tokens": self.prefill_tokens,
            "prefill_s": round(self.prefill_s, 3),
            "decoding_s": round(self.decoding_s, 3),
            "slot_utilisation": round(self.row_steps / self.slot_steps, 4) if self.slot_steps else None,
        }


def spare_room_layer(keys: torch.Tensor, values: torch.Tensor, room: int):
    """A cache layer holding `keys` and `values` with room for `room` more columns (see SpareRoomLayer)."""
    from transformers.cache_utils import DynamicLayer

    global SpareRoomLayer
    if SpareRoomLayer is None:

        class _SpareRoomLayer(DynamicLayer):
            """A growing cache layer that writes each step's keys and values into spare columns.

            transformers' DynamicLayer concatenates at every step, copying the whole cache:
            about a third of a CPU decoding step at 64 rows (measured with torch.profiler). Here
            `keys` and `values` are views of larger buffers, and only a full buffer is copied.
            """

            def store(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
                length = keys.shape[2]
                self._keys = keys.new_empty((*keys.shape[:2], length + room, keys.shape[3]))
                self._values = values.new_empty((*values.shape[:2], length + room, values.shape[3]))
                self._keys[:, :, :length] = keys
                self._values[:, :, :length] = values
                self._length, self.device, self.is_initialized = length, keys.device, True
                self.keys, self.values = self._keys[:, :, :length], self._values[:, :, :length]

            def update(self, key_states, value_states, *args, **kwargs):
                new = key_states.shape[2]
                if self._length + new > self._keys.shape[2]:
                    self.store(self.keys, self.values, room=max(new, self._keys.shape[2]))
                end = self._length + new
                self._keys[:, :, self._length : end] = key_states
                self._values[:, :, self._length : end] = value_states
                self._length = end
                self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]
                return self.keys, self.values

        SpareRoomLayer = _SpareRoomLayer
    layer = SpareRoomLayer()
    layer.store(keys, values, room)
    return layer


SpareRoomLayer = None  # the class, made on first use (transformers is imported only with a model)


def cache_is_splicable(cache) -> bool:
    """A plain growing cache (one key and one value tensor per layer, no sliding window) whose
    rows and columns can be cut and joined; other caches (sliding, quantised, hybrid) are not."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    layers = getattr(cache, "layers", None)
    return (
        type(cache) is DynamicCache
        and bool(layers)
        and all(type(layer) in (DynamicLayer, SpareRoomLayer) and getattr(layer, "keys", None) is not None and layer.keys.dim() == 4 for layer in layers)
    )


class ContinuousBatch:
    """Greedy generation with rows replaced as they end. Use `run(jobs)`.

    `forward(input_ids, attention_mask, position_ids, cache)` runs the model and returns (logits
    of the last position per row, the cache); `decode(tokens)` turns token ids into text.

    With `forward_trees`, new prompts that start alike beyond the shared prefix (ItaP-AT's
    prompts of one input word, under different instructions) are prefilled as token trees: each
    shared start is computed once, and its keys and values are copied into every row that reads
    it. Jobs should then come sorted by their tokens, so that such prompts arrive together.
    """

    def __init__(self, forward: Callable, decode: Callable[[list[int]], str], eos_ids: list[int], device, prefix=None,
                 pad_id: int = 0, size: BatchSize | None = None, bytes_free: int | None = None,
                 forward_trees: Callable | None = None, row_tokens: int = 256, tree_tolerance: float = 1e-2):  # fmt: skip
        self.forward = forward
        # `forward_trees(packed, cache)`: one pass over token trees (token_tree.pack_trees), giving
        # the logits of each row's last `packed.kept` columns and the grown cache; None: no tree prefill.
        self.forward_trees = forward_trees
        self.row_tokens = row_tokens
        self.tree_tolerance = tree_tolerance  # largest logit difference from left padding that is float rounding
        self.trees_checked = False
        self.decode = decode
        self.eos = set(eos_ids)
        self.device = device
        self.prefix = prefix  # hf.SharedPrefix or None
        self.prefix_len = len(prefix.tokens) if prefix else 0
        self.pad_id = pad_id
        self.size = size or BatchSize("auto")
        self.bytes_free = bytes_free
        self.stats = DecodingStats()
        self.room = 16  # spare cache columns per row: the largest token budget, set by run()
        self.cache = None
        self.mask = None  # [rows, columns] long: 1 where a row reads the column
        self.last = None  # [rows] the newest token of each row, fed at the next step
        self.rows: list[Row | None] = []  # one per slot of the batch; None: free, for the next prompt

    # -- the cache ------------------------------------------------------------------------------

    def _layers(self, cache=None):
        return (cache or self.cache).layers

    def _keep(self, keep: list[int]) -> None:
        """Keep only rows `keep`, and drop the leading body columns none of them reads."""
        if not keep:
            self.cache = self.mask = self.last = None
            return
        rows = torch.tensor(keep, device=self.mask.device)
        mask = self.mask[rows]
        start = self.prefix_len
        dead = self._unread_columns(mask)
        columns = torch.cat([torch.arange(start, device=mask.device), torch.arange(start + dead, mask.shape[1], device=mask.device)])
        layers = self._layers()
        for number, layer in enumerate(layers):
            layers[number] = spare_room_layer(layer.keys[rows][:, :, columns], layer.values[rows][:, :, columns], self.room)
        self.mask = mask[:, columns]
        self.last = self.last[rows]

    def _join(self, cache, mask: torch.Tensor, last: torch.Tensor) -> None:
        """Add the prefilled rows (`cache`, `mask`: [prefix][padding][prompt]) below the running ones."""
        layers = self._layers(cache)
        if self.cache is None:
            for number, layer in enumerate(layers):
                layers[number] = spare_room_layer(layer.keys, layer.values, self.room)
            self.cache, self.mask, self.last = cache, mask, last
            return
        start = self.prefix_len
        old_body, new_body = self.mask.shape[1] - start, mask.shape[1] - start
        width = max(old_body, new_body)
        old_rows, new_rows = self.mask.shape[0], mask.shape[0]
        running = self._layers()
        for number, (old, new) in enumerate(zip(running, layers)):
            joined = []
            for a, b in ((old.keys, new.keys), (old.values, new.values)):
                both = a.new_zeros((old_rows + new_rows, a.shape[1], start + width, a.shape[3]))
                both[:old_rows, :, :start] = a[:, :, :start]
                both[:old_rows, :, start + width - old_body :] = a[:, :, start:]
                both[old_rows:, :, :start] = b[:, :, :start]
                both[old_rows:, :, start + width - new_body :] = b[:, :, start:]
                joined.append(both)
            running[number] = spare_room_layer(*joined, self.room)
        joined_mask = self.mask.new_zeros((old_rows + new_rows, start + width))
        joined_mask[:, :start] = 1
        joined_mask[:old_rows, start + width - old_body :] = self.mask[:, start:]
        joined_mask[old_rows:, start + width - new_body :] = mask[:, start:]
        self.mask = joined_mask
        self.last = torch.cat([self.last, last])

    # -- the loop -------------------------------------------------------------------------------

    def _prefill(self, jobs: list[tuple[int, list[int], int, tuple[str, ...]]]) -> list[Row]:
        """Run the new prompts (beyond the shared prefix): as token trees where they share starts,
        else as one left-padded batch. Return the rows that already ended at their first token,
        and join the others to the batch."""
        started = time.perf_counter()
        start = self.prefix_len
        own = [ids[start:] for _, ids, _, _ in jobs]
        trees = self._trees(own) if self.forward_trees is not None and len(own) > 1 else None
        if trees is not None:
            first, mask, cache = self._prefill_trees(own, trees)
            if not self.trees_checked:
                # The first tree pass is checked against left padding: a model that ignores custom
                # attention masks (some remote-code models) reads other prompts' tokens.
                self.trees_checked = True
                padded, padded_mask, padded_cache = self._prefill_padded(own)
                difference = float((first - padded).abs().max())
                if difference > self.tree_tolerance:
                    warnings.warn(f"the model does not honour custom attention masks (tree prefill off by {difference:.3g}); prefilling prompts one row each")
                    self.forward_trees = None
                    first, mask, cache, trees = padded, padded_mask, padded_cache, None
        else:
            first, mask, cache = self._prefill_padded(own)
        self.stats.prefill_tokens += sum(len(tree.tokens) for tree, _ in trees) if trees is not None else sum(len(ids) for ids in own)
        self.stats.prefill_passes += 1
        first = first.argmax(-1)
        first.tolist()  # waits for the device: the pass's time is complete
        self.stats.prefill_s += time.perf_counter() - started
        return self._start(jobs, first, mask, cache)

    def _trees(self, own: list[list[int]]) -> list[tuple[TokenTree, list[int]]] | None:
        """The prompts, in their order, merged into trees of at most `row_tokens` nodes (or one
        prompt's length, if longer), as (tree, the prompts' numbers). None when merging saves less
        than TREE_SAVING of the tokens: a tree row's dense mask then costs more than left padding."""
        budget = max(self.row_tokens, max(len(ids) for ids in own))
        groups, current, nodes = [], [], 0
        for number, ids in enumerate(own):
            # What the prompt adds to the tree: its tokens beyond the start it shares with the
            # previous prompt (exact for prompts in token order, an upper bound otherwise).
            added = len(ids) - (common_start(ids, own[current[-1]]) if current else 0)
            if current and nodes + added > budget:
                groups.append(current)
                current, nodes, added = [], 0, len(ids)
            current.append(number)
            nodes += added
        groups.append(current)
        trees = [(token_tree([(own[n], []) for n in group]), group) for group in groups]
        merged = sum(len(tree.tokens) for tree, _ in trees)
        return trees if merged <= (1 - TREE_SAVING) * sum(len(ids) for ids in own) else None

    def _prefill_trees(self, own: list[list[int]], trees: list[tuple[TokenTree, list[int]]]):
        """One pass over the prompts' token trees; each prompt's keys and values are then gathered
        from its tree's columns into the row layout [prefix][padding][prompt]."""
        start = self.prefix_len
        packed = pack_trees([tree for tree, _ in trees], [tree.ending() for tree, _ in trees], start, self.pad_id)
        cache = self.prefix.repeated(len(trees)) if self.prefix else None
        logits, cache = self.forward_trees(packed, cache)
        width = max(len(ids) for ids in own)
        tree_of = torch.zeros(len(own), dtype=torch.long)
        columns = torch.zeros((len(own), start + width), dtype=torch.long)  # padding reads column 0, masked out
        columns[:, :start] = torch.arange(start)
        mask = torch.zeros((len(own), start + width), dtype=torch.long)
        mask[:, :start] = 1
        last = torch.zeros(len(own), dtype=torch.long)
        for row, (tree, members) in enumerate(trees):
            for number, end in zip(members, tree.ends):
                path = packed.columns[row][tree.path(end)]
                tree_of[number] = row
                columns[number, start + width - len(path) :] = torch.from_numpy(start + path)
                mask[number, start + width - len(path) :] = 1
                last[number] = int(packed.columns[row][end]) - (packed.width - packed.kept)
        device = logits.device
        rows, columns = tree_of.to(device)[:, None], columns.to(device)
        for layer in self._layers(cache):
            # [trees, heads, columns, dim] -> [prompts, heads, prefix + width, dim]
            layer.keys = layer.keys[rows, :, columns].transpose(1, 2)
            layer.values = layer.values[rows, :, columns].transpose(1, 2)
        return logits[tree_of.to(device), last.to(device)].float(), mask, cache

    def _prefill_padded(self, own: list[list[int]]):
        """The new prompts as one left-padded batch."""
        start = self.prefix_len
        width = max(len(ids) for ids in own)
        input_ids = torch.full((len(own), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(own), start + width), dtype=torch.long)
        mask[:, :start] = 1
        for number, ids in enumerate(own):
            input_ids[number, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            mask[number, start + width - len(ids) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, start:]
        cache = self.prefix.repeated(len(own)) if self.prefix else None
        logits, cache = self.forward(input_ids.to(self.device), mask.to(self.device), positions.to(self.device), cache)
        return logits, mask, cache

    def _start(self, jobs, first, mask, cache) -> list[Row]:
        """Each new row's first token (`first`); the rows that did not end there join the batch."""
        rows, ended, keep = [], [], []
        for number, ((index, _, budget, stop), token) in enumerate(zip(jobs, first.tolist())):
            row = Row(index, budget, stop)
            if self._extend(row, token):
                ended.append(row)
            else:
                rows.append(row)
                keep.append(number)
        if self.bytes_free is not None and self.size.auto:
            longest = max(len(ids) + budget for _, ids, budget, _ in jobs)
            per_row = 2 * self._bytes_per_row_token_of(cache) * (longest + self.room)
            self.size.limit(int(MEMORY_SHARE * self.bytes_free / max(1, per_row)))
            self.bytes_free = None  # measured once, on the first prefill
        if keep:
            if len(keep) < len(jobs):
                index = torch.tensor(keep, device=first.device)
                for layer in self._layers(cache):
                    layer.keys, layer.values = layer.keys[index], layer.values[index]
                mask, first = mask[keep], first[index]
            if not self._fill(cache, mask.to(self.device), first, rows):
                self._compact(every_free_slot=True)  # the join copies the cache anyway
                self._join(cache, mask.to(self.device), first)
                self.rows += rows
        return ended

    # -- free slots -----------------------------------------------------------------------------
    #
    # A row that ends while requests wait leaves its slot free: its cache row stays where it is,
    # masked out, and the next prompt is written into it. Cutting the row out and joining the new
    # one instead would copy the whole cache twice (at 128 rows of ItaP-AT, ~0.8 GB each time,
    # which happens at almost every step once rows end at different steps).

    def _free_slots(self) -> list[int]:
        return [slot for slot, row in enumerate(self.rows) if row is None]

    def _fill(self, cache, mask: torch.Tensor, last: torch.Tensor, rows: list[Row]) -> bool:
        """Write the prefilled rows (`cache`, `mask`: [prefix][padding][prompt]) into free slots,
        their prompts flush with the batch's last column. False when they do not fit: too few free
        slots, or prompts wider than the running rows' columns."""
        free = self._free_slots()
        if self.cache is None or len(free) < len(rows):
            return False
        start, width = self.prefix_len, self.mask.shape[1]
        new_body = mask.shape[1] - start
        if new_body > width - start:
            return False
        slots = free[: len(rows)]
        index = torch.tensor(slots, device=self.mask.device)
        for old, new in zip(self._layers(), self._layers(cache)):
            old._keys[index, :, width - new_body : width] = new.keys[:, :, start:]
            old._values[index, :, width - new_body : width] = new.values[:, :, start:]
        placed = self.mask.new_zeros((len(slots), width))
        placed[:, :start] = 1
        placed[:, width - new_body :] = mask[:, start:]
        self.mask[index] = placed
        self.last[index] = last
        for slot, row in zip(slots, rows):
            self.rows[slot] = row
        return True

    def _compact(self, every_free_slot: bool = False) -> None:
        """Cut free slots out of the batch, and the leading columns no running row reads, once they
        are worth a copy of the cache (FREE_SLOTS, DEAD_COLUMNS) or `every_free_slot`."""
        running = [slot for slot, row in enumerate(self.rows) if row is not None]
        free = len(self.rows) - len(running)
        worth = free > 0 if every_free_slot else free > FREE_SLOTS * len(self.rows)
        if self.cache is not None and (worth or self._dead_columns()):
            self._keep(running)
            self.rows = [self.rows[slot] for slot in running]

    def _unread_columns(self, mask: torch.Tensor) -> int:
        """How many leading body columns (after the shared prefix) no row of `mask` reads."""
        read = mask[:, self.prefix_len :].any(0).nonzero()
        return int(read[0]) if len(read) else 0

    def _dead_columns(self) -> bool:
        """Whether enough leading body columns are read by no row to be worth a copy of the cache."""
        return self._unread_columns(self.mask) > max(DEAD_COLUMNS, (self.mask.shape[1] - self.prefix_len) // 4)

    @staticmethod
    def _bytes_per_row_token_of(cache) -> int:
        return sum(layer.keys[:1, :, :1].nbytes + layer.values[:1, :, :1].nbytes for layer in cache.layers)

    def _extend(self, row: Row, token: int) -> bool:
        """Add `token` to the row's answer; True when the answer has ended."""
        if token in self.eos:
            return True
        row.tokens.append(token)
        if row.stop:
            row.text = self.decode(row.tokens)
            if any(stop in row.text for stop in row.stop):
                return True
        return len(row.tokens) >= row.budget

    def _step(self, waiting: int) -> list[Row]:
        """One decoding step over every row of the batch. A row that ended leaves its slot free for a
        waiting request; free slots no request takes are cut out once there are enough (FREE_SLOTS).
        `waiting`: requests queued, not yet started."""
        self._compact()  # free slots beyond FREE_SLOTS are cut out; the others are computed, masked
        rows, running = len(self.rows), self._running()
        self.mask = torch.cat([self.mask, self.mask.new_ones((rows, 1))], dim=1)
        positions = self.mask.sum(-1, keepdim=True) - 1
        started = time.perf_counter()
        logits, self.cache = self.forward(self.last[:, None], self.mask, positions, self.cache)
        tokens = logits.argmax(-1)
        tokens_list = tokens.tolist()  # waits for the device: the step's time is complete
        self.size.record(rows, time.perf_counter() - started)
        self.stats.decoding_s += time.perf_counter() - started
        self.stats.decoding_steps += 1
        self.stats.row_steps += running
        self.stats.slot_steps += max(rows, min(self.size.current, running + waiting))
        self.last = tokens
        ended = []
        for slot, (row, token) in enumerate(zip(self.rows, tokens_list)):
            if row is None:
                continue  # a free slot: its token is not read
            if self._extend(row, token):
                ended.append(row)
                self.rows[slot] = None
                self.mask[slot, self.prefix_len :] = 0
        if ended and not waiting:
            self._compact()
        return ended

    def run(self, jobs: list[tuple[int, list[int], int, tuple[str, ...]]], is_oom: Callable[[BaseException], bool]) -> Iterator[list[tuple[int, str]]]:
        """`jobs`: (index, prompt ids, token budget, stop strings), in the order they should
        start. Yields the (index, answer text) of the requests that ended, step by step.

        Out of memory, the running rows go back to the queue (greedy answers come out the same
        when they are redone) and the batch is halved; the error is raised again once a single
        row does not fit.
        """
        by_index = {job[0]: job for job in jobs}
        self.room = max([16] + [budget for _, _, budget, _ in jobs])
        queue = deque(jobs)
        while queue or self._running():
            new = []
            try:
                free = self.size.current - self._running()
                if queue and free > 0:
                    if self.size.auto and not self.size.settled and len(queue) < free:
                        self.size.give_up_growing()  # too few requests left to measure a larger batch
                        free = self.size.current - self._running()
                    new = [queue.popleft() for _ in range(min(free, len(queue)))]
                if new:
                    # At most PREFILL_TOKENS (rows x padded width) per prefill pass: a wave of
                    # rows ending together must not need more memory than the decoding does.
                    rows = max(1, PREFILL_TOKENS // max(1, max(len(job[1]) for job in new) - self.prefix_len))
                    chunk = new[:rows]
                    ended = self._prefill(chunk)
                    queue.extendleft(reversed(new[rows:]))  # the rest waits for the next pass
                    new = []
                    if ended:
                        yield [(row.index, self._answer(row)) for row in ended]
                    continue  # fill the batch again before the next step
                if self._running():
                    ended = self._step(len(queue))
                    if ended:
                        yield [(row.index, self._answer(row)) for row in ended]
            except Exception as error:
                if not is_oom(error) or (self.size.current == 1 and self._running() + len(new) <= 1):
                    raise
                redo = [row.index for row in self.rows if row is not None] + [job[0] for job in new]
                self.rows, self.cache, self.mask, self.last = [], None, None, None
                queue.extendleft(by_index[index] for index in reversed(redo))
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                self.size.halve()

    def _running(self) -> int:
        return sum(row is not None for row in self.rows)

    def _answer(self, row: Row) -> str:
        text = self.decode(row.tokens)
        # Generation stops once a stop string is produced; the answer ends before it.
        return text[: min((text.find(s) for s in row.stop if s in text), default=len(text))]
