"""Group-conditional calibration: one calibration per group, a fallback to the pooled one for a group too
small for its alpha/delta, and a request that names its group (library, CLI, service).

Hand computation for the fixture (alpha = 0.1, delta = 0.1):
- the PAC threshold exists iff P(Bin(n, 0.9) <= n - 1) >= 0.9, i.e. 1 - 0.9**n >= 0.9: n >= 22
  (0.9**21 = 0.109, 0.9**22 = 0.098). Group "big" has 22 unsupported citations (its own calibration),
  group "small" 21 (it falls back to the pooled one).
- big's conformal rank k = ceil(23 * 0.9) = 21: tau = its 21st smallest unsupported score, 0.21; its PAC
  rank is 22 (all of them), so the deployed tau (the PAC one: this calibration's own miss rate is bounded,
  which returned labels can test) is its 22nd score, 0.22.
- pooled: 43 unsupported (big's 0.01..0.22 and small's 0.31..0.51), k = ceil(44 * 0.9) = 40: the 40th
  smallest, i.e. small's 18th, 0.48; deployed, its PAC rank 42: small's 20th, 0.50.
"""
import json
import sys

import httpx
import numpy as np
import pytest

from citebound import Guard
from citebound.calibration.groups import group_calibrations
from citebound.cli.main import main
from citebound.guarding.guard import GuardInputError

BIG = [round(0.01 * i, 2) for i in range(1, 23)]
SMALL = [round(0.30 + 0.01 * i, 2) for i in range(1, 22)]
ANSWER = "Cells make ATP [1]. Mitochondria divide [2]."


def _records():
    recs = [{"score": s, "label": 0, "group": "big"} for s in BIG]
    recs += [{"score": s, "label": 0, "group": "small"} for s in SMALL]
    recs += [{"score": 0.9, "label": 1, "group": g} for g in ("big", "small", "big")]
    recs += [{"score": 0.95, "label": 1}]  # no group: pooled only
    return recs


@pytest.fixture
def cal_path(tmp_path, capsys):
    src = tmp_path / "scores.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    out = tmp_path / "cal.json"
    rc = main(["calibrate", "--scores", str(src), "--verifier-id", "fixed", "--alpha", "0.1", "--delta", "0.1",
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "group 'small' falls back to the pooled calibration" in err
    assert "1 of 47 labelled citations carry no 'group'" in err
    return out


def test_each_group_gets_its_own_calibration_or_falls_back(cal_path):
    cal = json.loads(cal_path.read_text())
    assert cal["tau"] == pytest.approx(0.48) and cal["n_unsupported"] == 43
    big, small = cal["groups"]["big"], cal["groups"]["small"]
    assert (big["group"], big["tau"], big["k"], big["n_unsupported"], big["n_supported"]) == ("big", 0.21, 21, 22, 2)
    assert big["pac"]["k"] == 22 and big["pac"]["tau"] == pytest.approx(0.22)
    assert big["monitor_scores"] == sorted(BIG + [0.9, 0.9])  # the group's own reference
    assert small["fallback"] == "pooled" and (small["n_unsupported"], small["n_supported"]) == (21, 1)
    assert "too few" in small["reason"] and "tau" not in small


def scorer(claims, passages):
    """0.3 for every pair: above big's tau (0.22), below the pooled tau (0.48 and up)."""
    return np.full(len(claims), 0.3), np.ones(len(claims), bool)


def test_a_request_is_guarded_under_its_groups_threshold(cal_path):
    g = Guard(scorer, calibration=str(cal_path), reattributor=None)
    passages = ["Cells make ATP.", "Mitochondria divide."]
    _, pooled = g.guard(ANSWER, passages)
    _, big = g.guard(ANSWER, passages, group="big")
    _, small = g.guard(ANSWER, passages, group="small")
    assert (pooled.verified, pooled.flagged) == (0, 2)
    assert (big.verified, big.flagged) == (2, 0)
    assert (small.verified, small.flagged) == (0, 2)  # the pooled threshold
    assert big.guarantee_card["group"] == "big" and big.guarantee_card["calibrated_on"] == "big"
    assert big.guarantee_card["tau"] == 0.22 and big.guarantee_card["n_unsupported"] == 22
    assert (big.guarantee_card["in_force"], big.guarantee_card["conformal_tau"]) == ("pac", 0.21)
    s = small.guarantee_card
    # the pooled PAC rank: the smallest k with P(Bin(43, 0.9) <= k - 1) >= 0.9 is 42 (scipy), so small's 20th, 0.50
    assert (s["group"], s["calibrated_on"], s["tau"]) == ("small", "pooled", pytest.approx(0.50))
    reason = json.loads(cal_path.read_text())["groups"]["small"]["reason"]
    assert s["fallback"] == f"group 'small' uses the pooled calibration: {reason}" and "too few" in reason
    assert pooled.guarantee_card["group"] == "pooled" and "fallback" not in pooled.guarantee_card
    # one monitor per calibration: big's saw its 2 scores; the pooled one saw pooled's 2 and small's 2
    assert big.guarantee_card["monitor"]["deployed_scores"] == 2
    assert small.guarantee_card["monitor"]["deployed_scores"] == 4
    # a batch of one group, several answers
    outs = g.guard_many([(ANSWER, passages), ("Cells make ATP [2].", passages)], group="big")
    assert [r.verified for _, r in outs] == [2, 1]
    with pytest.raises(GuardInputError, match=r"unknown group 'bgi'.*\['big', 'small'\]"):
        g.guard(ANSWER, passages, group="bgi")
    with pytest.raises(GuardInputError, match="no groups"):
        Guard(scorer, threshold=0.5).guard(ANSWER, passages, group="big")


def test_a_fallback_group_written_without_a_reason_says_too_few(cal_path):
    """A hand-edited file whose fallback entry lost its reason: the card says why in the words of the default."""
    from citebound.guarding.card import Calibrations

    cal = json.loads(cal_path.read_text())
    del cal["groups"]["small"]["reason"]
    _, why = Calibrations(cal).resolve("small")
    assert why == "group 'small' uses the pooled calibration: too few labelled citations"


def test_group_calibrations_reports_a_group_without_unsupported_citations():
    def calibrate(s, y):
        if not (y == 0).any():
            raise ValueError("no unsupported examples")
        return {"tau": float(np.sort(s[y == 0])[-1]), "alpha": 0.1, "pac": {"tau": 0.0, "delta": 0.1, "k": 1},
                "n_unsupported": int((y == 0).sum())}

    out = group_calibrations([0.1, 0.2, 0.9, 0.8], [0, 0, 1, 1], ["a", "a", "b", None], calibrate)
    assert out["a"]["tau"] == 0.2 and out["a"]["group"] == "a"
    assert out["b"] == {"group": "b", "fallback": "pooled", "reason": "no unsupported examples",
                        "n_unsupported": 0, "n_supported": 1}


def test_the_cli_guards_each_record_under_its_group(cal_path, tmp_path, capsys):
    # a frozen-score calibration (--verifier-id) cannot drive a named verifier; with lexical, make one
    src = tmp_path / "lex.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    cal = tmp_path / "lex_cal.json"
    assert main(["calibrate", "--scores", str(src), "--verifier", "lexical", "--out", str(cal)]) == 0
    answers = tmp_path / "a.jsonl"
    rows = [{"id": "p", "answer": ANSWER, "passages": ["Cells make ATP.", "Mitochondria divide."]},
            {"id": "b", "answer": ANSWER, "passages": ["Cells make ATP.", "Mitochondria divide."], "group": "big"},
            {"id": "s", "answer": ANSWER, "passages": ["Cells make ATP.", "Mitochondria divide."], "group": "small"}]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["guard", "--input", str(answers), "--calibration", str(cal), "--quiet", "--verifier", "lexical"]) == 0
    got = {r["id"]: r["report"]["guarantee_card"] for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert (got["p"]["group"], got["b"]["group"], got["s"]["group"]) == ("pooled", "big", "small")
    assert (got["b"]["tau"], got["s"]["calibrated_on"]) == (0.22, "pooled")
    # offline, the monitor of one group's calibration reads only the reports guarded under it
    guarded = tmp_path / "guarded.jsonl"
    assert main(["guard", "--input", str(answers), "--calibration", str(cal), "--quiet", "--verifier", "lexical",
                 "--out", str(guarded)]) == 0
    capsys.readouterr()
    for group, fed, other in (("big", 2, 2), (None, 4, 1), ("small", 4, 1)):
        assert main(["monitor", "--reports", str(guarded), "--calibration", str(cal)]
                    + (["--group", group] if group else [])) == 0
        out = capsys.readouterr()
        card = json.loads(out.out)
        assert card["monitor"]["deployed_scores"] == fed and card["group"] == (group or "pooled")
        # the calibration the reports are read under: big's own, or the pooled one (small falls back to it)
        assert f"{other} reports of another calibration than {'big' if group == 'big' else 'pooled'!r} skipped" in out.err
    # --group is the default for records without one; an unknown one names the line
    assert main(["guard", "--input", str(answers), "--calibration", str(cal), "--quiet", "--verifier", "lexical",
                 "--group", "big"]) == 0
    got = [r["report"]["guarantee_card"]["group"] for r in map(json.loads, capsys.readouterr().out.splitlines())]
    assert got == ["big", "big", "small"]
    assert main(["guard", "--input", str(answers), "--calibration", str(cal), "--quiet", "--verifier", "lexical",
                 "--group", "nope"]) == 2
    assert f"{answers}:1" in capsys.readouterr().err


def test_the_service_guards_and_monitors_per_group(cal_path, tmp_path):
    pytest.importorskip("fastapi")
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent))
    from service_helpers import running

    from citebound.serving.state import ServeConfig

    src = tmp_path / "lex.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    folder = tmp_path / "cals"
    folder.mkdir()
    assert main(["calibrate", "--scores", str(src), "--verifier", "lexical", "--out", str(folder / "lab.json")]) == 0
    body = {"answer": ANSWER, "passages": ["Cells make ATP.", "Mitochondria divide."], "calibration": "lab"}
    token = "a-test-admin-token-0123456789"
    with running(ServeConfig(verifier="lexical", calibrations=str(folder), admin_token=token)) as url, \
            httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as c:
        card = c.post(f"{url}/v1/guard", json=body | {"group": "big"}).json()["report"]["guarantee_card"]
        assert (card["group"], card["tau"], card["monitor"]["deployed_scores"]) == ("big", 0.22, 2)
        card = c.post(f"{url}/v1/guard", json=body | {"group": "small"}).json()["report"]["guarantee_card"]
        assert (card["group"], card["calibrated_on"]) == ("small", "pooled")
        bad = c.post(f"{url}/v1/guard", json=body | {"group": "nope"})
        assert bad.status_code == 422 and "unknown group 'nope'" in bad.text
        mon = c.get(f"{url}/v1/monitor").json()["lab"]
        assert mon["group"] == "pooled" and mon["monitor"]["deployed_scores"] == 2
        assert mon["groups"]["big"]["monitor"]["deployed_scores"] == 2
        assert mon["groups"]["small"]["calibrated_on"] == "pooled"
        # labels for one group void that group's guarantee alone: 9 of 10 passed, P(Bin(10, .1) >= 9) ~ 9e-9
        v = c.post(f"{url}/v1/monitor/labels", json={"profile": "lab", "group": "big", "missed": 9, "unsupported": 10})
        assert v.status_code == 200 and v.json()["group"] == "big" and v.json()["monitor"]["state"] == "void"
        mon = c.get(f"{url}/v1/monitor").json()["lab"]
        assert mon["groups"]["big"]["monitor"]["state"] == "void" and mon["monitor"]["state"] != "void"
        metrics = c.get(f"{url}/metrics").text
        assert 'citebound_monitor_state{group="big",profile="lab",state="void"} 1.0' in metrics
        assert 'citebound_monitor_state{group="pooled",profile="lab",state="void"} 0.0' in metrics
