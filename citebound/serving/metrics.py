"""Prometheus metrics (on a registry of the app's own) and OpenTelemetry spans of the service."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from citebound.guarding.guard import GuardReport


class Metrics:
    """Prometheus metrics on a registry of the app's own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("citebound_requests", "HTTP requests by endpoint and status", ["endpoint", "status"],
                                registry=self.registry)
        self.latency = Histogram("citebound_request_seconds", "request latency", ["endpoint"], registry=self.registry,
                                 buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
        self.citations = Counter("citebound_citations", "guarded citations by outcome", ["outcome"],
                                 registry=self.registry)
        self.uncited = Counter("citebound_uncited_sentences", "guarded sentences with words that cite nothing "
                               "(unchecked)", registry=self.registry)
        self.batch_units = Histogram("citebound_batch_units", "(claim, passage) units per verifier call",
                                     registry=self.registry, buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
        self.batch_requests = Histogram("citebound_batch_requests", "requests' verifier calls merged per batch",
                                        registry=self.registry, buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64))
        self.queue_depth = Gauge("citebound_queue_depth", "verifier calls waiting for the batcher",
                                 registry=self.registry)
        self.in_flight = Gauge("citebound_in_flight", "requests being handled", registry=self.registry)
        self.martingale = Gauge("citebound_monitor_martingale", "the drift monitor's test martingale per calibration "
                                "profile and group (pooled: the profile's pooled calibration; suspect at the card's "
                                "alarm_at; NaN when the store cannot be read)",
                                ["profile", "group"], registry=self.registry)
        self.monitor_state = Gauge("citebound_monitor_state", "1 for the drift monitor's current state per profile "
                                   "and group", ["profile", "group", "state"], registry=self.registry)

    def record_monitors(self, guards: Mapping[str | None, Any]) -> None:
        """Each profile's monitor into its gauges (read at scrape time)."""
        from citebound.calibration.monitor import STATES

        for name, guard in guards.items():
            profile = name or "default"
            for group, keeper in {"pooled": guard.keeper, **guard.calibrations.groups}.items():
                now = keeper.state  # 'unavailable' when the store cannot say: then no martingale is claimed
                live = keeper.monitor is not None and now != "unavailable"
                self.martingale.labels(profile, group).set(keeper.monitor.value if live else float("nan"))
                for st in (*STATES, "off", "unavailable"):
                    self.monitor_state.labels(profile, group, st).set(float(now == st))

    def record(self, verifier: str, results: Sequence[tuple[str, GuardReport]]) -> None:
        """Citation outcomes into the counters (always) and into the current span (when tracing)."""
        span = current_span()
        for _, r in results:
            self.uncited.inc(r.uncited)
            for a in r.audit:
                self.citations.labels(a.action).inc()
                if span is not None:
                    span.add_event("citation", {"citebound.verifier": verifier, "citebound.outcome": a.action,
                                                "citebound.score": -1.0 if a.score is None else float(a.score),
                                                "citebound.cited": int(a.cited),
                                                "citebound.sentence": int(a.sentence_index)})


def current_span() -> Any:
    """The recording OpenTelemetry span, or None (no OpenTelemetry, or no span)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    span = trace.get_current_span()
    return span if span.is_recording() else None


@contextmanager
def guard_span(verifier: str, answers: int):
    """A ``citebound.guard`` span around one request's guard work (nothing without OpenTelemetry)."""
    try:
        from opentelemetry import trace
    except ImportError:  # the [serve] extra brings it; without it, no spans
        yield None
        return
    with trace.get_tracer("citebound").start_as_current_span("citebound.guard") as span:
        span.set_attribute("citebound.verifier", verifier)
        span.set_attribute("citebound.answers", answers)
        yield span
