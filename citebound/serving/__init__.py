"""``citebound serve``: the guard as an HTTP service and an OpenAI-compatible guarding proxy.

:mod:`~citebound.serving.app` (the app, its lifespan and bookkeeping), :mod:`~citebound.serving.state`
(config and shared state), :mod:`~citebound.serving.batcher` (micro-batching),
:mod:`~citebound.serving.metrics` (Prometheus and OpenTelemetry), :mod:`~citebound.serving.registry`
(calibration profiles), :mod:`~citebound.serving.models` (request and response models), and the
routes: :mod:`~citebound.serving.guard_routes`, :mod:`~citebound.serving.score_routes`,
:mod:`~citebound.serving.proxy`. :mod:`~citebound.serving.mcp_server` needs only the [mcp] extra, so this
package imports the service's modules (the [serve] extra) only when one of its names is asked for.
"""
from importlib import import_module
from typing import Any

_WHERE = {"create_app": "app", "serve": "app", "BatchedScorer": "batcher", "UnitBatcher": "batcher",
          "ServeConfig": "state"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"citebound.serving.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'citebound.serving' has no attribute {name!r}")


__all__ = ["create_app", "serve", "ServeConfig", "UnitBatcher", "BatchedScorer"]
