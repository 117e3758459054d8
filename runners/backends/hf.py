"""The `transformers` backend: a causal LM loaded in this process, answering requests in batches.

Generation is continuously batched (`equita.runners.backends.batching`): a row whose answer ends takes
the next request at once. Models whose cache cannot be spliced fall back to fixed batches
through `model.generate`, sorted longest first, so an out-of-memory error shows on the first
batch. Out of memory, a batch is halved until one request alone does not fit, which is then
reported as a model that does not fit. `--batch-size auto` measures the cost per row of the
first passes and doubles while it falls. A prompt start shared by all requests runs once (its
cache is copied into each batch), and log-likelihood requests are scored as token trees
(`equita.runners.backends.token_tree`).
"""

from __future__ import annotations

import copy
import inspect
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from ...builders.common import sha256_file
from ..errors import ModelError
from ..requests import Generate, Loglikelihood, Request, continuation_ids, prompt_ids, render_prompt
from .batching import TREE_SAVING, BatchSize, ContinuousBatch, cache_is_splicable, free_memory
from .models import ModelInfo
from .sources import EMBEDDED, convert_gguf, embedded_gguf, folder_fingerprint, shareable
from .token_tree import PackedTrees, pack_trees, token_tree, tree_saving

# A common prompt start shorter than this is recomputed per row: copying its cache costs more.
MIN_SHARED_PREFIX = 8
# Tree scoring and whole-sequence scoring agree to ~1e-5 in float32; a model that ignores the tree
# mask is off by whole nats.
TREE_TOLERANCE = 1e-2
# Nodes per row of tree-packed scoring: attention grows with the square of it, the matrix
# products (the bulk) only linearly, so rows stay short and the batch gives the width.
ROW_TOKENS = 256
# The same for prompts prefilled as trees: a tree row's attention is dense (its mask is a 4-D
# one), so on ItaP-AT one-shot prompts (~67 tokens past the system prompt) rows of 256 nodes
# prefilled 17,642 tokens in 59.9 s, rows of 128 19,054 tokens in 50.7 s, and left padding
# 26,390 tokens in 64.3 s (400 rows, batch 64, this project's 2-core CPU).
PREFILL_ROW_TOKENS = 128


@dataclass
class SharedPrefix:
    """The tokens all requests of a group start with, and their key/value cache (batch of one)."""

    tokens: list[int]
    cache: object

    def repeated(self, rows: int):
        """A fresh copy of the cache, one row per request, for a batch to extend."""
        cache = copy.deepcopy(self.cache)
        cache.batch_repeat_interleave(rows)
        return cache


def _pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        parsed = None
    if parsed is None or parsed.type not in ("cpu", "cuda", "mps"):
        raise ModelError(f"--device {device!r}: not a device equita runs on; use auto, cpu, cuda, cuda:N or mps")
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(f"--device {device}: no CUDA device is available here")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ModelError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise ModelError(f"--device {device}: no Apple MPS device is available here")
    return device


def _pick_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32  # CPU kernels are fastest and exact in float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError:
        raise ModelError(f"--dtype {dtype!r}: use auto, float32, bfloat16 or float16") from None


def _returned_cache(output):
    """The key/value cache a forward pass returns (`cache` from transformers 5.2x, `past_key_values` before)."""
    return output.get("cache", None) if "cache" in output else output.get("past_key_values", None)


def _merge_stats(stats: dict, new: dict) -> None:
    """Add one group's batching record to the task's: counts add up, the batch size is the largest."""
    for key, value in new.items():
        if key == "batch_size":
            stats[key] = max(stats.get(key, 0), value)
        elif key == "batch_size_trials":
            stats.setdefault(key, {}).update(value)
        elif (isinstance(value, int) or key.endswith("_s")) and not isinstance(value, bool) and key != "batch_size_requested":
            stats[key] = round(stats.get(key, 0) + value, 3) if key.endswith("_s") else stats.get(key, 0) + value
        else:
            stats[key] = value
    if stats.get("decoding_steps") and "slot_steps" in stats:
        stats["slot_utilisation"] = round(stats["decoded_tokens"] / stats["slot_steps"], 4)


def _is_oom(error: BaseException) -> bool:
    if isinstance(error, torch.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and ("out of memory" in str(error) or "can't allocate memory" in str(error))


def load_transformers(
    name: str, revision: str | None = None, device: str = "auto", dtype: str = "auto", trust_remote_code: bool = False
) -> "TransformersModel":
    """Load `name`: a short name (`smollm2`), a .gguf file, a local folder or a Hub id."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not name.strip():
        raise ModelError("--model is empty: give a short name, a .gguf file, a checkpoint folder or a Hub id")
    device = _pick_device(device)
    torch_dtype = _pick_dtype(dtype, device)
    path = Path(name).expanduser()
    if name in EMBEDDED:
        gguf = embedded_gguf(name)
        source, folder, model_revision = "embedded", convert_gguf(gguf), sha256_file(gguf)
        load_from, hub_revision = str(folder), None
    elif path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"model {name!r}: no such GGUF file")
        source, folder, model_revision = "gguf", convert_gguf(path), sha256_file(path)
        load_from, hub_revision = str(folder), None
    elif path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(f"model {name!r}: the folder has no config.json, so it is not a transformers checkpoint")
        source, load_from, hub_revision = "local", str(path), None
        model_revision = folder_fingerprint(path)
    elif path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelError(f"model {name!r}: not a folder with a checkpoint, a .gguf file, or a Hub id (org/name)")
    else:
        from huggingface_hub.errors import HFValidationError
        from huggingface_hub.utils import validate_repo_id

        try:
            validate_repo_id(name)
        except HFValidationError as error:
            raise ModelError(f"--model {name!r}: no such local file or folder, and not a valid Hub id ({str(error).splitlines()[0]})") from None
        source, load_from, hub_revision, model_revision = "hub", name, revision, revision or ""
    if revision is not None and source != "hub":
        raise ModelError(f"--revision {revision!r} applies to Hub models only; {name!r} is a {source} model")
    try:
        tokenizer = AutoTokenizer.from_pretrained(load_from, revision=hub_revision, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(
            load_from, revision=hub_revision, dtype=torch_dtype, trust_remote_code=trust_remote_code
        )
    except OSError as error:
        where = "on the Hub (is it reachable? HF_HUB_OFFLINE is " + os.environ.get("HF_HUB_OFFLINE", "unset") + ")"
        raise ModelError(f"model {name!r} not found: not a local folder, a .gguf file or a short name ({', '.join(EMBEDDED)}), nor {where}: {error}") from None
    except ValueError as error:
        raise ModelError(f"model {name!r} cannot be loaded: {error}") from None
    except Exception as error:
        if _is_oom(error):
            raise ModelError(f"model {name!r} does not fit on {device} in {torch_dtype}: {error}") from None
        raise
    if source == "hub":
        model_revision = getattr(model.config, "_commit_hash", None) or revision or "unknown"
    try:
        model.to(device)
    except Exception as error:
        if _is_oom(error):
            raise ModelError(f"model {name!r} does not fit on {device} in {torch_dtype}: {error}") from None
        raise
    model.eval()
    info = ModelInfo(
        id=name if source in ("hub", "embedded") else path.name,
        source=source,
        revision=model_revision,
        path=shareable(str(load_from)),
        dtype=str(torch_dtype).removeprefix("torch."),
        device=device,
        chat_template=bool(getattr(tokenizer, "chat_template", None)),
        trust_remote_code=trust_remote_code,
        parameters=sum(p.numel() for p in model.parameters()),
    )
    return TransformersModel(model, tokenizer, info, folder=Path(load_from))


class TransformersModel:
    """A causal LM and its tokenizer, answering `Generate` and `Loglikelihood` requests."""

    def __init__(self, model, tokenizer, info: ModelInfo, folder: Path | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.info = info
        self.folder = folder  # the local weights (or the Hub id), for peers that load the same model; never recorded
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if self.pad_id is None:
            self.pad_id = 0  # masked out anyway
        eos = model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos:
            eos.append(tokenizer.eos_token_id)
        self.eos_ids = eos
        self.max_length = getattr(model.config, "max_position_embeddings", None) or 4096
        forward = inspect.signature(model.forward).parameters
        self._takes_positions = "position_ids" in forward
        self._takes_logits_to_keep = "logits_to_keep" in forward
        # transformers 5.2x renamed `past_key_values` to `cache`; older releases only know the former.
        self._cache_argument = "cache" if "cache" in forward else "past_key_values"
        # Tree-packed scoring needs position ids and a custom 4-D mask; the first batch checks that
        # the model honours the mask (some remote-code models ignore it) before it is trusted.
        self._tree_ok = self._takes_positions
        self._tree_checked = False
        self._splicable: bool | None = None  # continuous batching possible (checked on first use)

    def cannot(self, request: Request) -> str | None:
        return None  # a model in this process answers every request type

    # -- prompts -------------------------------------------------------------------------------

    def render(self, request: Request) -> str:
        """The exact text the model reads: the chat template with the assistant's turn opened,
        or, for raw-text requests and tokenizers without a chat template, plain text."""
        return render_prompt(request, self.tokenizer)

    def _encode(self, text: str, request: Request) -> list[int]:
        return prompt_ids(request, text, self.tokenizer)

    # -- batching ------------------------------------------------------------------------------

    def answer(self, requests: Sequence[Request], batch_size: int | str = "auto", stats: dict | None = None) -> Iterator[tuple[list[int], list[dict]]]:
        """Answer `requests`, yielding (indices, responses) as they are ready.

        Responses: {"text": ...} for `Generate`; {"logprobs": [...], "greedy": [...]} (one
        entry per continuation) for `Loglikelihood`. The caller saves each batch as it comes,
        which is what makes a run resumable. `batch_size`: rows per forward pass, or "auto"
        (measured, see `equita.runners.backends.batching`). `stats`, when given, receives the batch size
        used and, for generation, the decoding counts (slot utilisation).
        """
        if batch_size != "auto" and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch size must be 'auto' or at least 1, not {batch_size!r}")
        stats = {} if stats is None else stats
        encoded, continuations = [], {}
        for index, request in enumerate(requests):
            ids = self._encode(self.render(request), request)
            if isinstance(request, Loglikelihood):
                continuations[index] = self._continuation_tokens(request)
                longest = max(len(tokens) for tokens in continuations[index])
            else:
                longest = request.max_new_tokens
            if len(ids) + longest > self.max_length:
                raise ModelError(
                    f"request {index}: prompt of {len(ids)} tokens plus {longest} to produce exceeds the model's {self.max_length}"
                )
            encoded.append(ids)

        # Requests with the same settings batch together.
        def settings(i):
            r = requests[i]
            return ("gen", r.max_new_tokens, r.stop) if isinstance(r, Generate) else ("ll",)

        groups: dict[tuple, list[int]] = {}
        for i in range(len(requests)):
            groups.setdefault(settings(i), []).append(i)
        for key in sorted(groups, key=str):
            members = groups[key]
            prefix = self._shared_prefix([encoded[i] for i in members])
            if isinstance(requests[members[0]], Generate) and self._can_splice(prefix):
                # Token order where prompts start alike beyond the shared prefix (ItaP-AT's prompts of
                # one input word): they arrive together and are prefilled as token trees. Otherwise
                # longest first, so that a prefill pass pads little.
                start = len(prefix.tokens) if prefix else 0
                trees = self._tree_ok and tree_saving([encoded[i][start:] for i in members]) >= TREE_SAVING
                order = sorted(members, key=lambda i: encoded[i] if trees else -len(encoded[i]))
                yield from self._generate_continuously(order, encoded, requests, prefix, batch_size, stats, trees)
            else:
                # Fixed batches: generation longest first (an out-of-memory error shows at once,
                # padding stays small); scoring in token order, so that requests starting alike share tree rows.
                order = sorted(members, key=lambda i: -len(encoded[i]) if isinstance(requests[i], Generate) else encoded[i])
                yield from self._static_batches(order, encoded, continuations, requests, prefix, batch_size, stats)

    def _static_batches(self, order, encoded, continuations, requests, prefix, batch_size, stats):
        """Fixed batches in `order`: scoring, and generation where the cache cannot be spliced."""
        generating = isinstance(requests[order[0]], Generate)
        size = BatchSize(batch_size, ceiling=len(order), samples=1 if generating else 2)
        decoding: dict = {}  # static generation: the same counts as continuous batching, for comparison
        position = 0
        while position < len(order):
            indices = order[position : position + size.current]
            started = time.perf_counter()
            try:
                with torch.inference_mode():
                    if generating:
                        responses, counts = self._generate([encoded[i] for i in indices], requests[indices[0]], prefix)
                        for key, value in counts.items():
                            decoding[key] = decoding.get(key, 0) + value
                    else:
                        responses = self._loglikelihood([encoded[i] for i in indices], [continuations[i] for i in indices], prefix)
            except Exception as error:
                if not _is_oom(error):
                    raise
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                if len(indices) == 1:
                    raise ModelError(
                        f"model {self.info.id!r} does not fit on {self.info.device} in {self.info.dtype}: "
                        f"one request of {len(encoded[indices[0]])} tokens ran out of memory ({error})"
                    ) from None
                size.current = len(indices)
                size.halve()
                continue
            size.record(len(indices), time.perf_counter() - started)
            position += len(indices)
            yield indices, responses
        _merge_stats(stats, {**size.as_record(), **decoding})

    def _generate_continuously(self, order, encoded, requests, prefix, batch_size, stats, trees: bool = False):
        """Generation with rows replaced as they end (`equita.runners.backends.batching.ContinuousBatch`);
        `trees`: prompts that start alike are prefilled as token trees."""
        size = BatchSize(batch_size, ceiling=len(order))
        batch = ContinuousBatch(
            forward=self._forward_last,
            decode=lambda tokens: self.tokenizer.decode(tokens, skip_special_tokens=True),
            eos_ids=self.eos_ids,
            device=self.model.device,
            prefix=prefix,
            pad_id=self.pad_id,
            size=size,
            bytes_free=free_memory(self.model.device),
            forward_trees=(lambda packed, cache: self._forward_packed(packed, cache, keep_cache=True)) if trees else None,
            row_tokens=PREFILL_ROW_TOKENS,
            tree_tolerance=TREE_TOLERANCE,
        )
        jobs = [(i, encoded[i], requests[i].max_new_tokens, tuple(requests[i].stop)) for i in order]
        try:
            with torch.inference_mode():
                for ended in batch.run(jobs, _is_oom):
                    yield [index for index, _ in ended], [{"text": text} for _, text in ended]
        except Exception as error:
            if not _is_oom(error):
                raise
            raise ModelError(
                f"model {self.info.id!r} does not fit on {self.info.device} in {self.info.dtype}: one request ran out of memory ({error})"
            ) from None
        _merge_stats(stats, {**size.as_record(), **batch.stats.as_record()})

    def _forward_last(self, input_ids, attention_mask, position_ids, cache):
        """One forward pass; the logits of each row's last position, and the grown cache."""
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids, "use_cache": True}
        if cache is not None:
            kwargs[self._cache_argument] = cache
        if self._takes_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        output = self.model(**kwargs)
        return output.logits[:, -1].float(), _returned_cache(output)

    def _can_splice(self, prefix: SharedPrefix | None) -> bool:
        """Whether generation can run continuously: the model takes position ids and its cache is
        a plain one whose rows can be cut and joined (checked once, on a one-token pass)."""
        if self._splicable is None:
            self._splicable = False
            if self._takes_positions:
                if prefix is not None:
                    cache = prefix.cache
                else:
                    token = torch.tensor([[self.pad_id]], device=self.model.device)
                    with torch.inference_mode():
                        cache = _returned_cache(self.model(input_ids=token, use_cache=True))
                self._splicable = cache_is_splicable(cache)
        return self._splicable

    def _shared_prefix(self, sequences: list[list[int]]) -> SharedPrefix | None:
        """The tokens every sequence starts with (a system prompt, a few-shot preamble), run once.

        Each batch then starts from a copy of this key/value cache instead of recomputing the
        prefix for every row. At least one token of each sequence stays outside the prefix,
        since the last prompt position must be computed to predict what follows.
        """
        if not self._takes_positions or len(sequences) < 2:
            return None
        first, length = sequences[0], min(len(s) for s in sequences) - 1
        for other in sequences[1:]:
            common = 0
            while common < length and other[common] == first[common]:
                common += 1
            length = common
        if length < MIN_SHARED_PREFIX:
            return None
        tokens = first[:length]
        kwargs = {"input_ids": torch.tensor([tokens], device=self.model.device), "use_cache": True}
        if self._takes_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        with torch.inference_mode():
            output = self.model(**kwargs)
        cache = _returned_cache(output)
        if cache is None or not hasattr(cache, "batch_repeat_interleave"):
            return None
        return SharedPrefix(tokens, cache)

    def _left_pad(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in sequences)
        input_ids = torch.full((len(sequences), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, ids in enumerate(sequences):
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        return input_ids.to(self.model.device), attention.to(self.model.device)

    def _generate(self, sequences: list[list[int]], request: Generate, prefix: SharedPrefix | None = None) -> list[dict]:
        from transformers import GenerationConfig

        config = GenerationConfig(
            max_new_tokens=request.max_new_tokens,
            do_sample=False,
            num_beams=1,
            eos_token_id=self.eos_ids,
            pad_token_id=self.pad_id,
            stop_strings=list(request.stop) or None,
        )
        extra = {"tokenizer": self.tokenizer} if request.stop else {}
        if prefix is None:
            input_ids, attention = self._left_pad(sequences)
        else:
            # Rows are [shared prefix][padding][own tokens]: the prefix comes from the cache, the
            # padding is masked, and positions follow the mask, so each row reads as unpadded.
            size = len(prefix.tokens)
            own_ids, own_mask = self._left_pad([s[size:] for s in sequences])
            input_ids = torch.cat([torch.tensor([prefix.tokens] * len(sequences), device=own_ids.device), own_ids], dim=1)
            attention = torch.cat([torch.ones((len(sequences), size), dtype=torch.long, device=own_ids.device), own_mask], dim=1)
            extra[self._cache_argument] = prefix.repeated(len(sequences))
        output = self.model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config, **extra)
        new = output[:, input_ids.shape[1] :]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        responses = []
        for text in texts:
            # Generation stops once the stop string is produced; the answer ends before it.
            cut = min((text.find(s) for s in request.stop if s in text), default=len(text))
            responses.append({"text": text[:cut]})
        # Every row runs as many steps as the longest; a row's own ones end at its first end token.
        ended = torch.isin(new, torch.tensor(self.eos_ids, device=new.device)) if self.eos_ids else torch.zeros_like(new, dtype=torch.bool)
        own = torch.where(ended.any(1), ended.int().argmax(1) + 1, torch.full_like(ended[:, 0], new.shape[1], dtype=torch.long))
        steps = max(0, new.shape[1] - 1)  # the first token comes from the prompt's pass
        counts = {"decoding_steps": steps, "decoded_tokens": int((own - 1).clamp(min=0).sum()), "slot_steps": steps * len(sequences)}
        return responses, counts

    def _continuation_tokens(self, request: Loglikelihood) -> list[list[int]]:
        """Each continuation's token ids, tokenised on its own (a leading space stays in the token)."""
        tokens = [continuation_ids(self.tokenizer, c) for c in request.continuations]
        for continuation, ids in zip(request.continuations, tokens):
            if not ids:
                raise ModelError(f"continuation {continuation!r} is empty once tokenised")
        return tokens

    def _loglikelihood(
        self, contexts: list[list[int]], continuations: list[list[list[int]]], prefix: SharedPrefix | None = None
    ) -> list[dict]:
        """Score every continuation of every request of the batch in one forward pass over token trees.

        Requests (sorted so that neighbours start alike) are merged into trees of at most
        ROW_TOKENS nodes, one tree per row: a context start shared by several requests, and
        continuations that start alike (" uomo", " uomini"), are computed once. Each node attends
        to its ancestors only, through a 4-D attention mask, at the position its branch gives
        it. Nodes whose outputs predict continuation tokens sit at the end of their row, so the
        vocabulary projection runs on those alone. Jobs' 1,026 sentences x 4 words become
        ~8,200 nodes, where scoring context + continuation sequences reads ~57,000 tokens.
        """
        if not self._tree_ok:
            return self._loglikelihood_joint(contexts, continuations)
        if not self._tree_checked:
            self._tree_checked = True
            tree = self._loglikelihood(contexts[:1], continuations[:1], prefix)[0]["logprobs"]
            whole = self._loglikelihood_joint(contexts[:1], continuations[:1])[0]["logprobs"]
            if max(abs(a - b) for a, b in zip(tree, whole)) > TREE_TOLERANCE:
                warnings.warn(f"model {self.info.id!r} does not honour custom attention masks; scoring each continuation whole (slower)")
                self._tree_ok = False
                return self._loglikelihood_joint(contexts, continuations)
        size = len(prefix.tokens) if prefix else 0
        rows, current, budget = [], [], 0
        for number, (context, options) in enumerate(zip(contexts, continuations)):
            nodes = len(context) - size + sum(len(option) - 1 for option in options)
            if current and budget + nodes > ROW_TOKENS:
                rows.append(current)
                current, budget = [], 0
            current.append(number)
            budget += nodes
        rows.append(current)
        trees = [token_tree([(contexts[n][size:], continuations[n]) for n in row]) for row in rows]
        packed = pack_trees(trees, [tree.predicting() for tree in trees], size, self.pad_id)
        logits, _ = self._forward_packed(packed, prefix.repeated(len(trees)) if prefix else None)
        logits = logits.float().log_softmax(-1)
        width, kept, columns_of = packed.width, packed.kept, packed.columns
        results: list[dict] = [{} for _ in contexts]
        for row, (tree, members) in enumerate(zip(trees, rows)):
            columns = columns_of[row] - (width - kept)
            for number, paths in zip(members, tree.steps):
                scored = {"logprobs": [], "greedy": []}
                for path in paths:
                    scores = logits[row, torch.from_numpy(columns[[node for node, _ in path]])]
                    targets = torch.tensor([token for _, token in path], device=scores.device)
                    scored["logprobs"].append(float(scores.gather(-1, targets[:, None]).sum()))
                    scored["greedy"].append(bool((scores.argmax(-1) == targets).all()))
                results[number] = scored
        return results

    def _forward_packed(self, packed: PackedTrees, cache=None, keep_cache: bool = False):
        """One forward pass over token trees (`token_tree.pack_trees`) after an optional prefix
        cache: the logits of each row's last `packed.kept` columns, and the grown cache (when
        one was given or `keep_cache`; else None)."""
        dtype = self.model.dtype
        mask = torch.zeros(packed.allowed.shape, dtype=dtype)
        mask.masked_fill_(~torch.from_numpy(packed.allowed), torch.finfo(dtype).min)
        device = self.model.device
        kwargs = {
            "input_ids": torch.from_numpy(packed.input_ids).to(device),
            "position_ids": torch.from_numpy(packed.positions).to(device),
            "attention_mask": mask[:, None].to(device),
            "use_cache": cache is not None or keep_cache,
        }
        if cache is not None:
            kwargs[self._cache_argument] = cache
        if self._takes_logits_to_keep:
            kwargs["logits_to_keep"] = packed.kept
        output = self.model(**kwargs)
        return output.logits[:, -packed.kept :], (_returned_cache(output) if cache is not None or keep_cache else None)

    def _loglikelihood_joint(self, contexts: list[list[int]], continuations: list[list[list[int]]]) -> list[dict]:
        """The plain way, for models whose cache cannot be repeated: one row per context + continuation.

        Left padding puts each continuation at the end of its row, so only the last few
        positions' logits are needed (logits_to_keep), not the whole vocabulary x length.
        """
        sequences, targets, owners = [], [], []
        for number, (context, row_tokens) in enumerate(zip(contexts, continuations)):
            for tokens in row_tokens:
                sequences.append(context + tokens)
                targets.append(tokens)
                owners.append(number)
        input_ids, attention = self._left_pad(sequences)
        longest = max(len(t) for t in targets)
        kwargs = {"input_ids": input_ids, "attention_mask": attention, "use_cache": False}
        if self._takes_positions:
            kwargs["position_ids"] = (attention.cumsum(-1) - 1).clamp(min=0)
        if self._takes_logits_to_keep:
            kwargs["logits_to_keep"] = longest + 1
        logits = self.model(**kwargs).logits
        logits = logits[:, -(longest + 1) :].float().log_softmax(-1)
        results = [{"logprobs": [], "greedy": []} for _ in continuations]
        for row, tokens in enumerate(targets):
            # Position -1 predicts the token after the sequence; -(n+1) .. -2 predict the continuation.
            scores = logits[row, -(len(tokens) + 1) : -1]
            target = torch.tensor(tokens, device=scores.device)
            picked = scores.gather(-1, target[:, None])[:, 0]
            results[owners[row]]["logprobs"].append(float(picked.sum()))
            results[owners[row]]["greedy"].append(bool((scores.argmax(-1) == target).all()))
        return results
