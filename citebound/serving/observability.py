"""Logs as JSON lines and OTLP export of the service's spans.

``--log-format json`` writes every log record (uvicorn's access and error logs, citebound's own) as one JSON
object a line on stderr: ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, and for access records
``client``, ``method``, ``path``, ``status``.

Spans (``citebound.guard``, one per guarded request, with an event per citation) are exported over OTLP/HTTP when
the standard OpenTelemetry variables ask for it: ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set, or ``OTEL_TRACES_EXPORTER=otlp``; ``OTEL_SERVICE_NAME`` (default
``citebound``), ``OTEL_EXPORTER_OTLP_HEADERS`` and the rest are read by the exporter itself.
``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it off. Needs the ``[otlp]`` extra.
"""
from __future__ import annotations

import json
import logging
import os
import time
from typing import Any


class JsonFormatter(logging.Formatter):
    """One JSON object a line; a record's message is never split over lines."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name,
        }
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            client, method, path, _version, status = args
            out.update(client=client, method=method, path=path, status=int(status))
            out["message"] = f"{method} {path} {status}"
        else:
            out["message"] = record.getMessage()
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=True)


def json_log_config() -> dict[str, Any]:
    """uvicorn's ``log_config`` for ``--log-format json`` (text keeps uvicorn's own, so it passes none)."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"json": {"()": "citebound.serving.observability.JsonFormatter"}},
        "handlers": {"stderr": handler},
        "loggers": {name: {"handlers": ["stderr"], "level": "INFO", "propagate": False}
                    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "citebound")},
    }


def otlp_wanted(env: dict[str, str] | None = None) -> bool:
    e = os.environ if env is None else env
    if e.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {x.strip().lower() for x in e.get("OTEL_TRACES_EXPORTER", "").split(",") if x.strip()}
    if "none" in exporters:
        return False
    return "otlp" in exporters or bool(e.get("OTEL_EXPORTER_OTLP_ENDPOINT") or e.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def check_tracing() -> str | None:
    """Why the OTLP export the environment asks for cannot run (None: it can, or none is asked for)."""
    if not otlp_wanted():
        return None
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
    except ImportError:
        return ("the OpenTelemetry variables ask for OTLP export of spans (OTEL_EXPORTER_OTLP_*), but the exporter is not "
                "installed: pip install 'citebound[otlp]', or unset them")
    return None


_INSTALLED = False


def setup_tracing() -> bool:
    """Install a tracer provider exporting over OTLP/HTTP, once per process, when the environment asks for it."""
    global _INSTALLED
    if _INSTALLED or not otlp_wanted() or check_tracing():
        return _INSTALLED
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "citebound")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _INSTALLED = True
    return True
