"""The actions (annotate, remove, block) and the fail-closed rule, in the library and the CLI."""
import json

import numpy as np
import pytest

from citebound import Guard, examples
from citebound.cli.main import main
from citebound.guarding.guard import GuardInputError

PASSAGES = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]
ANSWER = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2]. Mitochondria produce ATP [2]."


def test_remove_drops_only_the_failed_sentence_and_block_withholds_past_the_budget():
    text, rep = Guard("lexical", action="remove").guard(ANSWER, PASSAGES)
    assert text == "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2]." and rep.removed_sentences == 1
    assert Guard("lexical", remove=True).guard(ANSWER, PASSAGES)[0] == text
    # 1 of 3 citations failed: review budget 1/3; past 0.3 it is withheld, at 0.34 it is not
    text, rep = Guard("lexical", action="block", block_above=0.3).guard(ANSWER, PASSAGES)
    assert text == "" and rep.blocked and rep.review_budget == pytest.approx(1 / 3)
    assert "1 of 3 citations" in rep.block_reason
    text, rep = Guard("lexical", action="block", block_above=0.34).guard(ANSWER, PASSAGES)
    assert text.startswith("Statins") and not rep.blocked
    for bad in ({"action": "block"}, {"action": "block", "block_above": 1.0}, {"action": "ignore"},
                {"block_above": 0.5}, {"action": "annotate", "remove": True}, {"on_error": "maybe"}):
        with pytest.raises(GuardInputError):
            Guard("lexical", **bad)


def nan_scorer(claims, passages):
    """No score for any claim about unicorns (a verifier that could not judge it)."""
    s = np.array([np.nan if "Unicorns" in c else 0.9 for c in claims])
    return s, ~np.isnan(s)


def raising(claims, passages):
    raise RuntimeError("model server down")


@pytest.mark.parametrize("on_error,marker,budget", [("closed", "[2 UNVERIFIED]", 1 / 3), ("open", "[2]", 0.0)])
def test_no_score_is_never_a_pass(on_error, marker, budget):
    g = Guard(nan_scorer, threshold=0.5, reattributor=None, on_error=on_error)
    text, rep = g.guard(ANSWER, PASSAGES)
    assert f"Unicorns sing opera loudly {marker}." in text
    assert (rep.verified, rep.unverified, rep.flagged) == (2, 1, 0) and rep.review_budget == pytest.approx(budget)
    a = rep.audit[1]
    assert a.action == "unverified" and a.score is None and "no score" in a.reason
    # a verifier that raises for everything: all three unverified, none verified, with the reason
    text, rep = Guard(raising, threshold=0.5, on_error=on_error).guard(ANSWER, PASSAGES)
    assert rep.unverified == 3 and rep.verified == 0 and "model server down" in rep.audit[0].reason


def test_the_cli_actions(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"id": "x", "answer": ANSWER, "passages": PASSAGES}) + "\n"
                   + examples.path().read_text().replace("\n", " ") + "\n")
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--quiet", "--action", "block",
                 "--block-above", "0.3"]) == 0
    out = capsys.readouterr()
    rows = [json.loads(x) for x in out.out.splitlines()]
    assert rows[0]["guarded_answer"] is None and rows[0]["report"]["blocked"]
    # the shipped example: 1 of its 4 citations invalid, budget 0.25, not past 0.3: it is not blocked
    assert rows[1]["guarded_answer"] and not rows[1]["report"]["blocked"] and '"blocked": 1' in out.err
    for args, msg in ((["--action", "block"], "--block-above"), (["--block-above", "0.5"], "only for --action block"),
                      (["--remove", "--action", "block", "--block-above", "0.5"], "contradicts")):
        assert main(["guard", "--input", str(src), "--verifier", "lexical", "--quiet", *args]) == 2
        assert msg in capsys.readouterr().err


def test_on_void_flag_all_from_the_cli():
    """--on-void reaches the guard: with flag-all and a void monitor nothing passes (the void comes from
    labels, which the CLI guard has none of, so here the guard's keeper is driven directly)."""
    import argparse

    from citebound.cli.common import add_policy_args, policy_kwargs

    p = argparse.ArgumentParser()
    add_policy_args(p)
    kw = policy_kwargs(p.parse_args(["--on-void", "flag-all"]))
    assert kw["on_void"] == "flag-all"
    g = Guard("lexical", **kw)
    assert g.keeper.labels(9, 10) == "void"  # 9 of 10 unsupported passed: P(Bin(10, 0.1) >= 9) ~ 9e-9
    _, rep = g.guard("Statins lower LDL cholesterol [1].", PASSAGES)
    assert (rep.verified, rep.flagged) == (0, 1)


def test_a_verifier_down_for_every_unit_costs_a_bounded_number_of_calls():
    """Halving isolates one bad unit (2 calls a level); when every unit fails it stops after
    2 * ceil(log2 n) + 2 more calls: 64 citations -> at most 1 + 14 calls, not 127."""
    calls = []

    def down(claims, passages):
        calls.append(len(claims))
        raise RuntimeError("connection refused")

    answer = " ".join(f"Claim number {i} holds [{1 + i % 2}]." for i in range(64))
    _, rep = Guard(down, threshold=0.5, reattributor=None).guard(answer, PASSAGES)
    assert rep.unverified == 64 and rep.verified == 0
    assert len(calls) <= 15 and calls[0] == 64

    def one_bad(claims, passages):  # only claim 37 breaks the verifier: it alone goes unscored
        calls.append(len(claims))
        if any("number 37 " in c for c in claims):
            raise RuntimeError("bad text")
        return np.full(len(claims), 0.9), np.ones(len(claims), bool)

    calls.clear()
    _, rep = Guard(one_bad, threshold=0.5, reattributor=None).guard(answer, PASSAGES)
    assert (rep.verified, rep.unverified) == (63, 1) and rep.audit[37].action == "unverified"
    assert len(calls) == 1 + 2 * 6  # one level of halving per power of two
