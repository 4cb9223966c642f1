"""The ``paperqa2`` pipeline run by the ``paper-qa`` package itself, over fixed passages.

Each task's passages are added to a fresh ``paperqa.Docs`` as one text each
(``Docs.aadd_texts``), retrieval is switched off (every passage is summarised,
as the fixed-context design requires) and ``Docs.aquery`` answers with
paper-qa's own prompts. paper-qa reaches the model through litellm at an
OpenAI-compatible endpoint: a served model, or citebound's in-process endpoint
for a model loaded here (:mod:`citebound.scoring.chat_endpoint`). Its ``(pqac-xxxxxxxx)``
citation keys are mapped back to ``[N]`` passage markers.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from citebound.scoring.chat_endpoint import Endpoint

# litellm fetches a model price list at import unless told to use its bundled copy (offline nodes)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


_KEY = re.compile(r"\bpqac-[a-zA-Z0-9]{8}\b")
_PAREN = re.compile(r"\s*\(([^()]*\bpqac-[a-zA-Z0-9]{8}\b[^()]*)\)")


def markers_from_citation_keys(raw_answer: str, key_to_passages: Mapping[str, Sequence[int]]) -> str:
    """Replace paper-qa's ``(pqac-…, pqac-…)`` citations with ``[N, M]`` passage markers.

    A key names a summary (paper-qa hashes question + summary text), so passages
    whose summaries are identical share one key: it maps to all of them. Keys
    paper-qa did not issue (hallucinated) are dropped, as paper-qa drops them.

    >>> markers_from_citation_keys("ATP (pqac-aaaaaaaa, pqac-bbbbbbbb). No (pqac-zzzzzzzz).",
    ...                            {"pqac-aaaaaaaa": [3], "pqac-bbbbbbbb": [1, 2]})
    'ATP [3, 1, 2]. No.'
    """
    def passages(keys: Sequence[str]) -> list[int]:
        return list(dict.fromkeys(n for k in keys for n in key_to_passages.get(k, ())))

    def marker(ns: list[int]) -> str:
        return f"[{', '.join(map(str, ns))}]" if ns else ""

    text = _PAREN.sub(lambda m: (" " + marker(ns)) if (ns := passages(_KEY.findall(m.group(1)))) else "",
                      raw_answer)
    return _KEY.sub(lambda m: marker(passages([m.group(0)])), text)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def paperqa_settings(endpoint: Endpoint, overrides: Mapping[str, Any] | None = None):
    """paper-qa ``Settings`` whose answer and summary LLM are the model at ``endpoint`` (greedy)."""
    from paperqa import Settings

    name = f"openai/{endpoint.model}"
    # timeout: a model served on a busy CPU can take minutes per call; litellm's 60 s default made a
    # loaded smoke run record timeouts as generation errors
    params: dict[str, Any] = {"model": name, "api_base": endpoint.base_url, "api_key": endpoint.api_key,
                              "temperature": 0.0, "timeout": 600}
    if endpoint.extra_body:
        params["extra_body"] = dict(endpoint.extra_body)
    router = {"model_list": [{"model_name": name, "litellm_params": params}]}
    fixed = {"llm": name, "llm_config": router, "summary_llm": name, "summary_llm_config": router, "temperature": 0.0}
    return Settings(**_merge(dict(overrides or {}), fixed))


def quiet_litellm() -> None:
    """litellm prints provider banners and cost-map misses for local model names; keep rule logs readable."""
    import litellm

    litellm.suppress_debug_info = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "lmi.llms"):
        logging.getLogger(name).setLevel(logging.ERROR)


async def answer_task(task: Mapping[str, Any], settings) -> dict[str, Any]:
    """One question over its fixed passages with ``Docs.aadd_texts`` + ``Docs.aquery``."""
    from paperqa import Docs
    from paperqa.types import Doc, Text

    docs = Docs()
    name_to_passage: dict[str, int] = {}
    for n, p in enumerate(task["passages"], 1):
        name = f"passage{n}"
        doc = Doc(docname=name, dockey=f"{task['id']}-{n}", citation=(p.get("title") or "").strip() or f"Passage {n}")
        if await docs.aadd_texts([Text(text=p["text"], name=name, doc=doc)], doc, settings=settings):
            name_to_passage[name] = n
    session = await docs.aquery(task["question"], settings=settings)
    used = sorted((name_to_passage[c.text.name], c) for c in session.contexts if c.text.name in name_to_passage)
    key_to_passages: dict[str, list[int]] = {}
    for n, c in used:
        key_to_passages.setdefault(c.id, []).append(n)
    prompt_tokens = sum(v[0] for v in session.token_counts.values())
    completion_tokens = sum(v[1] for v in session.token_counts.values())
    return {"output": markers_from_citation_keys(session.raw_answer, key_to_passages),
            "steps": {"evidence": "\n\n".join(f"[{n}] (relevance {c.score}) {c.context}" for n, c in used),
                      "raw_answer": session.raw_answer, "answer": session.answer},
            "prompt_tokens": int(prompt_tokens), "completion_tokens": int(completion_tokens)}


def run_paperqa(endpoint: Endpoint, pipeline: Mapping[str, Any], items: Sequence[Mapping[str, Any]]
                ) -> list[dict[str, Any]]:
    """Answer a batch of tasks concurrently; any item's failure fails the batch (the caller retries per item)."""
    import paperqa

    quiet_litellm()
    settings = paperqa_settings(endpoint, pipeline.get("settings"))

    async def run_all():
        return await asyncio.gather(*(answer_task(t, settings) for t in items))

    engine = f"paper-qa {paperqa.__version__}"
    return [{**r, "engine": engine} for r in asyncio.run(run_all())]
