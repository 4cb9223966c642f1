"""Cited-answer generation over fixed passages: backends, pipelines, resumable runs.

Backends share ``chat(list of message lists) -> list[Completion]``:
``transformers`` (CPU / small models), ``vllm`` (offline ``LLM`` API, batched,
tensor-parallel) and ``openai`` (any OpenAI-compatible server). Greedy
decoding (temperature 0); Qwen "thinking" is disabled via chat-template kwargs.
"""
from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

log = logging.getLogger(__name__)
Messages = list[dict[str, str]]


# ---------------------------------------------------------------- pipelines

def format_passages(passages: Sequence[Mapping[str, str]]) -> str:
    return "\n\n".join(f"[{i + 1}] {p.get('title') or ''}\n{p['text']}".strip() for i, p in enumerate(passages))


_CITE_NORMALISE = re.compile(r"\[(?:passage|reference|ref|doc|document|source|excerpt)s?\s*#?\s*(\d+)\]", re.I)


def normalise_citations(text: str) -> str:
    """Map '[Passage 2]', '[Ref 3]', '[Excerpt 4]' ... to '[2]' etc.

    >>> normalise_citations("A [Passage 2]. B [ref 3].")
    'A [2]. B [3].'
    """
    return _CITE_NORMALISE.sub(lambda m: f"[{m.group(1)}]", text)


def run_pipeline(backend, pipeline: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Run every step of a pipeline for a batch of items (one backend call per step).

    A pipeline with ``engine: paper-qa`` is run by the paper-qa package instead,
    against ``backend.endpoint()``; its steps come from paper-qa, not config.
    """
    if pipeline.get("engine") == "paper-qa":
        from citebound.study.paperqa_engine import run_paperqa

        res = run_paperqa(backend.endpoint(), pipeline, items)
        return [{**r, "output": normalise_citations(r["output"])} for r in res]
    if pipeline.get("engine", "prompts") != "prompts":
        raise ValueError(f"pipeline {pipeline.get('name')}: unknown engine {pipeline['engine']!r}; "
                         "valid: 'prompts', 'paper-qa'")
    states = [{"question": it["question"], "passages": format_passages(it["passages"]), "steps": {},
               "prompt_tokens": 0, "completion_tokens": 0} for it in items]
    for step in pipeline["steps"]:
        msgs: list[Messages] = []
        owners: list[tuple[int, int]] = []
        for i, (it, st) in enumerate(zip(items, states)):
            if step["kind"] == "per_passage":
                for n, p in enumerate(it["passages"], 1):
                    msgs.append(_messages(step, {**st["steps"], **st, "n": n, "passage": p["text"]}))
                    owners.append((i, n))
            else:
                msgs.append(_messages(step, {**st["steps"], **st}))
                owners.append((i, 0))
        outs = backend.chat(msgs) if msgs else []
        per_item: dict[int, list[str]] = {}
        for (i, n), o in zip(owners, outs):
            states[i]["prompt_tokens"] += o.prompt_tokens
            states[i]["completion_tokens"] += o.completion_tokens
            per_item.setdefault(i, []).append(f"[{n}] {o.text}" if step["kind"] == "per_passage" else o.text)
        for i, st in enumerate(states):
            parts = per_item.get(i, [])
            st["steps"][step["name"]] = "\n\n".join(parts) if step["kind"] == "per_passage" else (parts[0] if parts else "")
    return [{"output": normalise_citations(st["steps"][pipeline["final"]]), "steps": st["steps"],
             "prompt_tokens": st["prompt_tokens"], "completion_tokens": st["completion_tokens"]} for st in states]


def _messages(step: Mapping[str, Any], values: Mapping[str, Any]) -> Messages:
    m: Messages = []
    if step.get("system"):
        m.append({"role": "system", "content": step["system"]})
    m.append({"role": "user", "content": step["prompt"].format(**values)})
    return m


# ---------------------------------------------------------------- tasks and resumable runs

def load_tasks(path: str | Path, max_items: int | None = None) -> list[dict[str, Any]]:
    """Questions with fixed passages (ScholarQABench-Multi ``input`` + ``ctxs``).

    A record without a question is a :class:`~citebound.scoring.io.DataError` naming
    the file and record; passages with blank text are left out, and how many
    is logged.
    """
    from citebound.scoring.io import DataError, read_records
    from citebound.text.citations import is_blank

    tasks, n_blank = [], 0
    for i, rec in enumerate(read_records(path)):
        question = rec.get("input") or rec.get("question")
        if is_blank(question):
            raise DataError(f"{path}: record {i} (id {rec.get('id', i)!r}) has no 'input' or 'question'")
        ctxs = rec.get("ctxs", [])
        passages = [{"text": c.get("text"), "title": c.get("title") or ""} for c in ctxs if not is_blank(c.get("text"))]
        n_blank += len(ctxs) - len(passages)
        tasks.append({"id": str(rec.get("id", i)), "question": question, "passages": passages})
    if n_blank:
        log.warning("%s: %d passages with blank text left out of the generation tasks", path, n_blank)
    return tasks[:max_items] if max_items else tasks


def done_ids(partial: Path) -> set[str]:
    """Ids already written to a partial output (a torn last line is ignored)."""
    ids: set[str] = set()
    if partial.exists():
        for line in partial.read_text().splitlines():
            try:
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError):
                continue
    return ids


def generate_file(backend, pipeline: Mapping[str, Any], tasks: Sequence[Mapping[str, Any]], out_path: str | Path,
                  meta: Mapping[str, Any], batch_size: int = 8, stop_after: int | None = None) -> dict[str, int]:
    """Generate answers for all tasks into ``out_path`` (JSONL), resumably.

    Work goes to ``<out>.partial`` (appended and flushed per batch; done ids are
    skipped on restart); the file is renamed to ``out_path`` only when complete.
    A failing batch is retried item by item; an item that still fails is
    written with its ``error`` and no answer. ``stop_after`` (tests) stops early
    after that many new items, leaving the partial file as a killed run would.
    """
    out_path = Path(out_path)
    partial = out_path.with_name(out_path.name + ".partial")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    seen = done_ids(partial)
    todo = [t for t in tasks if t["id"] not in seen]
    stats = {"skipped_done": len(tasks) - len(todo), "generated": 0, "errors": 0}
    bar = tqdm(total=len(todo), desc=f"generate[{meta.get('model')}/{pipeline['name']}]", unit="item")
    with open(partial, "a", encoding="utf-8") as fh:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            try:
                results = run_pipeline(backend, pipeline, batch)
            except Exception as e:  # noqa: BLE001 - isolate the failing item(s)
                log.warning("batch failed (%s); retrying item by item", e)
                results = []
                for t in batch:
                    try:
                        results.extend(run_pipeline(backend, pipeline, [t]))
                    except Exception as e1:  # noqa: BLE001
                        results.append({"output": None, "error": f"{type(e1).__name__}: {e1}"})
            for t, r in zip(batch, results):
                rec = {"id": t["id"], "question": t["question"], "ctxs": t["passages"], **r, **meta,
                       "pipeline": pipeline["name"]}
                stats["errors" if r.get("output") is None else "generated"] += 1
                fh.write(json.dumps(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            bar.update(len(batch))
            if stop_after is not None and stats["generated"] + stats["errors"] >= stop_after:
                bar.close()
                return stats
    bar.close()
    os.replace(partial, out_path)
    return stats
