"""RAGAS faithfulness (the ``ragas`` library) as a binary verifier over (claim, window) units.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from citebound.scoring.llm_backends import api_key

log = logging.getLogger(__name__)


class RagasVerifier:
    """RAGAS faithfulness (the ``ragas`` library) on one (claim, window) at a time.

    Binary: supported iff every statement RAGAS extracts from the claim is
    judged faithful to the window (faithfulness == 1).
    """

    binary = True

    def __init__(self, cfg: Mapping[str, Any]):
        from openai import AsyncOpenAI
        from ragas.llms.base import llm_factory
        from ragas.metrics.collections import Faithfulness

        self.name = cfg.get("name", "ragas")
        self.cfg = dict(cfg)
        self.batch_size = int(cfg.get("max_concurrency", 8)) * 4
        from citebound.scoring.llm_backends import install_log_redaction

        install_log_redaction()
        client = AsyncOpenAI(base_url=cfg["base_url"], api_key=api_key(cfg),
                             max_retries=int(cfg.get("max_retries", 5)),
                             timeout=float(cfg.get("timeout_seconds", 120)))
        self.metric = Faithfulness(llm=llm_factory(str(cfg["model"]), client=client,
                                                   temperature=float(cfg.get("temperature", 0))))
        self.n_unparsed = 0

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        import asyncio

        sem_n = int(self.cfg.get("max_concurrency", 8))

        async def run() -> list[float]:
            sem = asyncio.Semaphore(sem_n)

            async def one(c: str, w: str) -> float:
                async with sem:
                    try:
                        r = await self.metric.ascore(user_input=c, response=c, retrieved_contexts=[w])
                    except Exception as e:  # noqa: BLE001 - the model's output did not fit RAGAS's schema
                        parse_error = isinstance(e, ValueError) or any(
                            k.__name__.startswith("Instructor") for k in type(e).__mro__)
                        if not parse_error:
                            raise
                        self.n_unparsed += 1
                        log.warning("%s: RAGAS could not parse the model's answer (%s); unit left unscored",
                                    self.name, str(e).splitlines()[0][:200])
                        return float("nan")
                    return float(r.value)

            return await asyncio.gather(*(one(c, w) for c, w in zip(claims, windows)))

        values = np.array(asyncio.run(run()), dtype=float)
        verdict = values >= 1.0 - 1e-9
        scores = np.where(np.isnan(values), np.nan, verdict.astype(float))
        return scores, verdict
