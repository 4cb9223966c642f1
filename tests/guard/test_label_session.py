"""citebound label's session (#56, round 49): a skipped answer named line by line, a verifier that loads with
another id than the labels file's refused before it scores, and a resumed session that keeps its whole sample.
The arguments are parsed by citebound's own parser; the page itself is not served."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
from citebound.cli.common import CLIError  # noqa: E402
from citebound.cli.label import make_label_session  # noqa: E402
from citebound.cli.main import parse  # noqa: E402

RECS = [{"answer": "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2].",
         "passages": ["Statins lower LDL cholesterol.", "Mitochondria produce ATP."]},
        {"answer": "Aspirin thins blood [1]. " + "x" * 500_000, "passages": ["Aspirin thins blood."]},
        {"answer": "Insulin lowers glucose [0].", "passages": ["Insulin lowers glucose."], "citation_base": 0}]


@pytest.fixture
def inp(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in RECS))
    return f


def args(inp, out, *extra):
    return parse(["label", "--input", str(inp), "--out", str(out), "--verifier", "lexical", "--seed", "3", *extra])


def test_an_answer_the_guard_cannot_plan_is_named_by_its_line_and_counted(inp, tmp_path, capsys):
    s = make_label_session(args(inp, tmp_path / "l.jsonl"))
    err = capsys.readouterr().err
    assert f"skipped: {inp}:2: the answer has 500025 characters" in err
    assert "1 answers skipped (not sampled from)" in err
    # answers 1 and 3: two citations and one (base 0, index 0), all sampled
    assert "3 answers, 3 citations, 0 invalid or unreadable (no passage; not sampled), 3 to sample from; sampled 3" in err
    assert sorted(it.passage for it in s.sample) == sorted(["Statins lower LDL cholesterol.", "Mitochondria produce ATP.",
                                                            "Insulin lowers glucose."])


def test_a_verifier_that_loads_with_another_id_is_refused_before_it_scores(inp, tmp_path, monkeypatch):
    import citebound.scoring.loader as loader

    real, scored = loader.load_scorer, []

    def other_id(*a, **kw):
        s = real(*a, **kw)
        s.hash, inner = "another-id", s.score
        s.score = lambda c, p: scored.append(len(c)) or inner(c, p)
        return s

    monkeypatch.setattr(loader, "load_scorer", other_id)
    with pytest.raises(CLIError, match="verifier 'lexical' loaded with id another-id, not "):
        make_label_session(args(inp, tmp_path / "l.jsonl"))
    assert scored == []


def test_a_resumed_session_keeps_its_whole_sample_and_scores_only_the_rest(inp, tmp_path, capsys):
    out = tmp_path / "l.jsonl"
    first = make_label_session(args(inp, out))
    order = [it.item_id for it in first.sample]
    first.label(order[0], "supported")
    again = make_label_session(args(inp, out))
    assert [it.item_id for it in again.sample] == order and again.current().item_id == order[1]
    assert [it.score is None for it in again.sample] == [True, False, False]  # the labelled one is not scored again
    assert "scoring the 2 sampled citations not labelled yet" in capsys.readouterr().err
