"""Requests merged into token trees, so that shared starts are computed once, and trees packed
into the rows of one forward pass (see `TransformersModel._loglikelihood` and the tree prefill
of `equita.runners.backends.batching.ContinuousBatch`). Pure Python and numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TokenTree:
    """Several requests as one token tree: shared starts are stored once.

    Node i has token `tokens[i]`, parent `parents[i]` (-1 at a root) and position `depths[i]`.
    `ends[r]` is the node where request r's context ends. `steps[r][k]` lists, for continuation
    k of request r, (node whose output predicts the token, token). Only predicting nodes need logits.
    """

    tokens: list[int]
    parents: list[int]
    depths: list[int]
    steps: list[list[list[tuple[int, int]]]]
    ends: list[int]

    def predicting(self) -> np.ndarray:
        """Nodes whose logits scoring reads: those predicting a continuation token."""
        flags = np.zeros(len(self.tokens), dtype=bool)
        for request in self.steps:
            for path in request:
                flags[[node for node, _ in path]] = True
        return flags

    def ending(self) -> np.ndarray:
        """Nodes whose logits generation reads: each prompt's last token."""
        flags = np.zeros(len(self.tokens), dtype=bool)
        flags[self.ends] = True
        return flags

    def path(self, node: int) -> list[int]:
        """The nodes from the root to `node`, in order: one request's tokens."""
        nodes = []
        while node >= 0:
            nodes.append(node)
            node = self.parents[node]
        return nodes[::-1]


def token_tree(requests: list[tuple[list[int], list[list[int]]]]) -> TokenTree:
    """Merge (context, continuations) pairs into one tree; a continuation's last token is never
    a node, since nothing it predicts is needed. A prompt to generate from is a context with no
    continuations."""
    tokens: list[int] = []
    parents: list[int] = []
    depths: list[int] = []
    children: dict[tuple[int, int], int] = {}

    def child(node: int, token: int) -> int:
        if (node, token) not in children:
            children[(node, token)] = len(tokens)
            tokens.append(token)
            parents.append(node)
            depths.append(depths[node] + 1 if node >= 0 else 0)
        return children[(node, token)]

    steps, ends = [], []
    for context, continuations in requests:
        node = -1
        for token in context:
            node = child(node, token)
        end_of_context, paths = node, []
        for continuation in continuations:
            node, path = end_of_context, []
            for number, token in enumerate(continuation):
                path.append((node, token))
                if number < len(continuation) - 1:
                    node = child(node, token)
            paths.append(path)
        steps.append(paths)
        ends.append(end_of_context)
    return TokenTree(tokens, parents, depths, steps, ends)


def common_start(a: list[int], b: list[int]) -> int:
    """How many tokens `a` and `b` start with alike."""
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length


def tree_saving(sequences: list[list[int]]) -> float:
    """The share of the tokens a token tree over `sequences`, taken in token order, would not
    compute again (0: nothing shared)."""
    ordered = sorted(sequences)
    total = sum(len(s) for s in ordered)
    shared = sum(common_start(a, b) for a, b in zip(ordered, ordered[1:]))
    return shared / total if total else 0.0


@dataclass
class PackedTrees:
    """Trees laid out as the rows of one forward pass after a shared prefix of `prefix` tokens.

    Row layout: [other nodes][padding][needed nodes], the nodes whose logits are read flush
    right, so the vocabulary projection runs on the last `kept` columns alone. `columns[r][i]`
    is the column of node i of tree r. `allowed[r, q, k]`: query column q may read key column k
    (the shared prefix, then the row's own columns); each node reads its ancestors and itself.
    """

    input_ids: np.ndarray  # [rows, width]
    positions: np.ndarray  # [rows, width]: prefix + depth
    allowed: np.ndarray  # [rows, width, prefix + width] bool
    columns: list[np.ndarray]
    kept: int

    @property
    def width(self) -> int:
        return self.input_ids.shape[1]


def pack_trees(trees: list[TokenTree], needed: list[np.ndarray], prefix: int, pad_id: int) -> PackedTrees:
    """Lay `trees` out one per row; `needed[r]` flags the nodes of tree r whose logits are read."""
    layouts = [(np.concatenate([np.flatnonzero(~flags), np.flatnonzero(flags)]), int(flags.sum())) for flags in needed]
    width = max(len(tree.tokens) for tree in trees)
    kept = max(count for _, count in layouts)
    input_ids = np.full((len(trees), width), pad_id, dtype=np.int64)
    positions = np.zeros((len(trees), width), dtype=np.int64)
    allowed = np.zeros((len(trees), width, prefix + width), dtype=bool)
    allowed[:, :, :prefix] = True  # every node may read the shared prefix
    allowed[:, np.arange(width), prefix + np.arange(width)] = True  # padding reads itself, so no row of the mask is empty
    columns_of = []
    for row, (tree, (order, count)) in enumerate(zip(trees, layouts)):
        n = len(tree.tokens)
        columns = np.empty(n, dtype=np.int64)
        columns[order] = np.concatenate([np.arange(n - count), np.arange(width - count, width)])
        ancestors = np.zeros((n, n), dtype=bool)
        for node, parent in enumerate(tree.parents):  # parents come before their children
            if parent >= 0:
                ancestors[node] = ancestors[parent]
            ancestors[node, node] = True
        input_ids[row, columns] = tree.tokens
        positions[row, columns] = prefix + np.asarray(tree.depths)
        allowed[row, columns[:, None], prefix + columns[None, :]] = ancestors
        columns_of.append(columns)
    return PackedTrees(input_ids, positions, allowed, columns_of, kept)
