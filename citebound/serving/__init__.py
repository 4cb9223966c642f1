"""``citebound serve``: the guard as an HTTP service and an OpenAI-compatible guarding proxy.

:mod:`~citebound.serving.app` (the app, its lifespan and bookkeeping), :mod:`~citebound.serving.state`
(config and shared state), :mod:`~citebound.serving.batcher` (micro-batching),
:mod:`~citebound.serving.metrics` (Prometheus and OpenTelemetry), :mod:`~citebound.serving.registry`
(calibration profiles), :mod:`~citebound.serving.models` (request and response models), and the
routes: :mod:`~citebound.serving.guard_routes`, :mod:`~citebound.serving.score_routes`,
:mod:`~citebound.serving.proxy`.
"""
from citebound.serving.app import create_app, serve
from citebound.serving.batcher import BatchedScorer, UnitBatcher
from citebound.serving.state import ServeConfig

__all__ = ["create_app", "serve", "ServeConfig", "UnitBatcher", "BatchedScorer"]
