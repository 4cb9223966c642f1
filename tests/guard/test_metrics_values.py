"""What the service's metrics and spans say of a request, value by value: each citation counted once under its
outcome, the uncited sentences added up, and each citation's span event (its outcome, score, -1 for none, the
passage it cites and its sentence, index 0 included); the guard span's count of answers. Spans go to OpenTelemetry's
in-memory exporter through a provider of the test's own."""
import pytest

pytest.importorskip("prometheus_client")
otel_sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from citebound.guarding.report import CitationAudit, GuardReport  # noqa: E402
from citebound.serving import metrics as metrics_mod  # noqa: E402


def _audit(sentence: int, cited: int, score, action: str) -> CitationAudit:
    return CitationAudit(sentence_index=sentence, claim="c", cited=cited, marker=f"[{cited}]", spans=[(0, 3)],
                         score=score, action=action)


REPORTS = [
    ("a", GuardReport(uncited=2, audit=[_audit(0, 0, 0.9, "verified"), _audit(0, 3, 0.0, "flagged"),
                                        _audit(2, 1, None, "unverified")])),
    ("b", GuardReport(uncited=1, audit=[_audit(1, 2, 0.25, "flagged")])),
]


def _provider():
    exporter = InMemorySpanExporter()
    provider = otel_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_counters_count_each_citation_once_under_its_outcome_and_add_up_uncited_sentences():
    """Answer a: verified, flagged, unverified, 2 uncited sentences; answer b: flagged, 1 uncited. Counters:
    verified 1, flagged 2, unverified 1; uncited 3."""
    m = metrics_mod.Metrics()
    m.record("lexical", REPORTS)
    got = {o: m.registry.get_sample_value("citebound_citations_total", {"outcome": o})
           for o in ("verified", "flagged", "unverified")}
    assert got == {"verified": 1.0, "flagged": 2.0, "unverified": 1.0}
    assert m.registry.get_sample_value("citebound_uncited_sentences_total") == 3.0


def test_each_citations_span_event_carries_its_outcome_score_passage_and_sentence():
    """Inside a recording span, one "citation" event per citation, in order, with the verifier's name; the
    unverified one (no score) says -1; the first cites passage 0 of sentence 0 (index 0 is a value, not none)."""
    provider, exporter = _provider()
    m = metrics_mod.Metrics()
    with provider.get_tracer("t").start_as_current_span("req"):
        m.record("lexical", REPORTS)
    (span,) = exporter.get_finished_spans()
    got = [(e.name, dict(e.attributes)) for e in span.events]
    want = [(0, 0, 0.9, "verified"), (0, 3, 0.0, "flagged"), (2, 1, -1.0, "unverified"), (1, 2, 0.25, "flagged")]
    assert got == [("citation", {"citebound.verifier": "lexical", "citebound.outcome": o, "citebound.score": s,
                                 "citebound.cited": c, "citebound.sentence": k}) for k, c, s, o in want]


def test_the_guard_span_names_the_verifier_and_counts_the_requests_answers(monkeypatch):
    from opentelemetry import trace

    provider, exporter = _provider()
    monkeypatch.setattr(trace, "get_tracer", lambda name, *a, **k: provider.get_tracer(name))
    with metrics_mod.guard_span("lexical", 3) as span:
        assert span is not None
    (done,) = exporter.get_finished_spans()
    assert done.name == "citebound.guard"
    assert dict(done.attributes) == {"citebound.verifier": "lexical", "citebound.answers": 3}
