"""Log-likelihood requests merged into token trees, so shared context starts and continuation
prefixes are computed once (see `TransformersModel._loglikelihood`). Pure Python and numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TokenTree:
    """Several log-likelihood requests as one token tree: shared context starts are stored once.

    Node i has token `tokens[i]`, parent `parents[i]` (-1 at a root) and position `depths[i]`.
    `steps[r][k]` lists, for continuation k of request r, (node whose output predicts the token,
    token). Only those predicting nodes need logits.
    """

    tokens: list[int]
    parents: list[int]
    depths: list[int]
    steps: list[list[list[tuple[int, int]]]]

    def predicting(self) -> np.ndarray:
        flags = np.zeros(len(self.tokens), dtype=bool)
        for request in self.steps:
            for path in request:
                flags[[node for node, _ in path]] = True
        return flags


def token_tree(requests: list[tuple[list[int], list[list[int]]]]) -> TokenTree:
    """Merge (context, continuations) pairs into one tree; a continuation's last token is never
    a node, since nothing it predicts is needed."""
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

    steps = []
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
    return TokenTree(tokens, parents, depths, steps)
