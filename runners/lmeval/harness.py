"""equita's tasks as lm-evaluation-harness 0.4 tasks: the class an exported YAML names.

`equita export lm-eval` writes one YAML per runner task whose `class` is `EquitaTask`, with the
task's name and its dataset's version and revision in `metadata.equita`. Everything a task does
comes from equita's own declaration (`runners/tasks`), not from a copy in the YAML:

- the prompt: the task's request for the row, rendered as `equita run` renders it: raw text as it
  is; a chat request through the model's chat template when lm-eval applies one
  (`--apply_chat_template`), else equita's plain layout for tokenizers without one;
- the request: greedy generation with the row's token budget and stop strings, or one
  log-likelihood per continuation (lm-eval's `multiple_choice` layout);
- the score: each document's answer in equita's response format, and at aggregation the task's
  metric module on all of them (the same classifier, formulas and intervals as `equita run`).
  Every metric carries (row id, answer), so the aggregation works on whatever lm-eval gathers
  from its processes.
"""

from __future__ import annotations

import functools
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from ..requests import PLAIN_TEMPLATE, PLAIN_TEMPLATE_NO_SYSTEM, Generate, messages
from ..tasks import EVAL_TASKS
from .export import metric_names


def render(request, chat_template) -> str:
    """The prompt `equita run` gives the model: raw text as it is, a chat request through the chat template."""
    if not request.chat:
        return request.user
    if chat_template is not None:
        return chat_template(messages(request))
    return PLAIN_TEMPLATE.format(system=request.system, user=request.user) if request.system else PLAIN_TEMPLATE_NO_SYSTEM.format(user=request.user)


class EquitaTask(ConfigurableTask):
    """One equita runner task, named by `metadata.equita.task` of its YAML."""

    def __init__(self, config: dict | None = None, **_: Any) -> None:
        config = {key: value for key, value in (config or {}).items() if key != "class"}
        equita = (config.get("metadata") or {}).get("equita") or {}
        if equita.get("task") not in EVAL_TASKS:
            raise ValueError(f"{config.get('task')}: metadata.equita.task {equita.get('task')!r} is not an equita task")
        self.equita = EVAL_TASKS[equita["task"]]
        self.metric_options = {**self.equita.metric_options, **(equita.get("metric_options") or {})}
        # Which kind of request the task makes, as export read it from the first row.
        kind = {"Generate": "generate_until", "Loglikelihood": "multiple_choice"}[equita["request"]]
        config |= {
            "output_type": kind,
            "doc_to_text": "id",  # unused: fewshot_context renders the prompt
            "doc_to_target": "" if kind == "generate_until" else 0,
            "process_results": lambda doc, results: {},  # unused: process_results below
            "metric_list": [{"metric": name, "aggregation": functools.partial(self._aggregate, name), "higher_is_better": self._higher(name)}
                            for name in metric_names(self.equita.name)],  # fmt: skip
        }
        if kind == "multiple_choice":
            config["doc_to_choice"] = lambda doc: list(self.equita.request(doc).continuations)
        super().__init__(config=config)
        self._scored: dict[tuple, dict] = {}

    def _higher(self, name: str) -> bool:
        p = self.equita.presentation
        return p.better == "higher" if name == p.headline else False

    # -- prompts and requests ---------------------------------------------------------------------

    def fewshot_context(self, doc, num_fewshot, system_instruction=None, apply_chat_template=False, fewshot_as_multiturn=False,
                        chat_template=None, gen_prefix=None):  # fmt: skip
        if num_fewshot or system_instruction or gen_prefix:
            raise ValueError(f"{self.config.task}: equita's prompts are zero-shot and carry their own system prompt; "
                             "leave out --num_fewshot, --system_instruction and gen_prefix")  # fmt: skip
        # lm-eval hands a chat template bound to add_generation_prompt only when it applies one.
        return render(self.equita.request(doc), chat_template if apply_chat_template else None)

    def construct_requests(self, doc, ctx, **kwargs):
        kwargs.pop("apply_chat_template", None), kwargs.pop("chat_template", None)
        request = self.equita.request(doc)
        if isinstance(request, Generate):
            settings = {"until": list(request.stop), "max_gen_toks": request.max_new_tokens, "do_sample": False}
            return Instance(request_type="generate_until", doc=doc, arguments=(ctx, settings), idx=0, **kwargs)
        # Each continuation carries its own leading space, as equita scores it: no delimiter.
        return [Instance(request_type="loglikelihood", doc=doc, arguments=(ctx, continuation), idx=i, **kwargs)
                for i, continuation in enumerate(request.continuations)]  # fmt: skip

    # -- scores -------------------------------------------------------------------------------------

    def process_results(self, doc, results):
        if isinstance(self.equita.request(doc), Generate):
            response = {"text": results[0]}
        else:
            response = {"logprobs": [float(logprob) for logprob, _ in results], "greedy": [bool(greedy) for _, greedy in results]}
        return {name: (doc["id"], response) for name in metric_names(self.equita.name)}

    def _aggregate(self, name: str, items: list) -> float | None:
        """One value of the task's metric module run on every answer (computed once per answer set)."""
        key = tuple(row_id for row_id, _ in items)
        if key not in self._scored:
            from ..run import load_metric

            answers = dict(items)
            # The dataset's order, as `equita run` scores it.
            rows = [row for row in self.dataset[self.config.test_split] if row["id"] in answers]
            metric, _ = load_metric(self.equita.metric)
            inputs = self.equita.metric_inputs(rows, [answers[row["id"]] for row in rows])
            output = metric.compute(**inputs, **self.metric_options)
            self._scored = {key: {k: v for k, v in output.items() if k not in self.equita.per_row_keys}}
        value = self._scored[key].get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

