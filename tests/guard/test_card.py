"""The guarantee card on every report and the drift monitor behind it: in the library and over HTTP."""
import hashlib
import json

import httpx
import pytest

pytest.importorskip("fastapi")
from calibration_helpers import calibrate  # noqa: E402
from service_helpers import running  # noqa: E402

from citebound import Guard, examples  # noqa: E402
from citebound.calibrations import shipped  # noqa: E402
from citebound.serving.state import ServeConfig  # noqa: E402

EXAMPLE = json.loads(examples.path().read_text())


def test_every_report_carries_the_card_of_its_calibration():
    g = Guard("lexical")
    _, r = g.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    card, cal = r.guarantee_card, shipped("lexical")
    want_hash = hashlib.sha256(json.dumps(cal, sort_keys=True).encode()).hexdigest()[:16]
    assert (card["group"], card["alpha"], card["beta"], card["delta"]) == ("pooled", 0.1, None, 0.1)
    # 2309 unsupported labels: the PAC threshold is deployed (with probability >= 0.9, this calibration misses
    # <= 10%), the conformal one is shown beside it
    assert (card["n_unsupported"], card["n_supported"], card["tau"]) == (2309, 567, cal["pac"]["tau"])
    assert (card["in_force"], card["conformal_tau"]) == ("pac", cal["tau"]) and cal["pac"]["tau"] >= cal["tau"]
    assert "attribution_gold" in card["calibration_data"] and "recalibrate" in card["scope"]
    assert card["calibration_hash"] == want_hash
    # 4 citations, one of them [4] INVALID (no passage, no score): the monitor saw the other 3
    assert r.n_citations == 4 and r.invalid == 1 and card["monitor"]["deployed_scores"] == 3
    _, r2 = g.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    assert r2.guarantee_card["monitor"]["deployed_scores"] == 6  # one monitor per guard, across calls


def test_a_void_guarantee_flags_everything_when_asked():
    annotate = Guard("lexical")
    flag_all = Guard("lexical", on_void="flag-all")
    for g in (annotate, flag_all):
        assert g.keeper.labels(9, 10) == "void"  # 9 of 10 unsupported passed: P(Bin(10, .1) >= 9) ~ 9e-9
    _, a = annotate.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    _, f = flag_all.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    assert a.verified + a.reattributed == 3 and a.guarantee_card["monitor"]["state"] == "void"
    assert (f.verified, f.reattributed, f.flagged, f.invalid) == (0, 0, 3, 1)
    assert "flag-all" in f.guarantee_card["monitor"]["action"]
    with pytest.raises(ValueError, match="on_void"):
        Guard("lexical", on_void="ignore")


def test_flag_all_acts_on_void_only_not_on_suspect(tmp_path):
    """A suspect monitor (scores drifted, no labels) asks for labels; it does not stop the guard passing."""
    # a calibration whose unsupported citations score 0.001..0.3 and supported 0.301..0.4: a deployed score of
    # 1.0 is far above what any mix of the two gives, so a run of them turns the monitor suspect
    recs = [{"score": round(0.001 * i, 4), "label": 0} for i in range(1, 301)]
    recs += [{"score": round(0.3 + 0.001 * i, 4), "label": 1} for i in range(1, 101)]
    g = Guard("lexical", calibration=str(calibrate(tmp_path, recs)), on_void="flag-all")
    for _ in range(40):
        _, rep = g.guard("Statins lower LDL cholesterol [1].", ["Statins lower LDL cholesterol in adults."])
    assert rep.guarantee_card["monitor"]["state"] == "suspect" and not g.keeper.flag_all
    assert rep.verified == 1 and "action" not in rep.guarantee_card["monitor"]
    assert g.threshold() == g.tau


def test_verify_citation_uses_the_threshold_in_force_now():
    """MCP's verify_citation under flag-all: once void, nothing passes, as in guard_answer."""
    from citebound.serving.mcp_server import verify_citation

    g = Guard("lexical", on_void="flag-all")
    claim, passage = "Statins lower LDL cholesterol", "Statins lower LDL cholesterol in adults."
    assert verify_citation(g, claim, passage)["verdict"] == "passes"
    # "Statins cure": 1 of 2 content terms, 0.5: above the shipped tau (0.368), so it passes the guard's rule
    assert verify_citation(g, "Statins cure", passage)["verdict"] == "passes"
    assert verify_citation(g, "Statins cure baldness quickly", passage)["verdict"] == "fails"  # 1 of 4: 0.25
    g.keeper.labels(9, 10)
    assert verify_citation(g, claim, passage)["verdict"] == "fails"


def test_no_calibration_or_an_old_one_says_the_monitor_is_off():
    _, r = Guard("lexical", threshold=0.5).guard("Cells make ATP [1].", ["Cells make ATP."])
    assert r.guarantee_card["monitor"] == {"state": "off", "reason": "no calibration"}
    old = {k: v for k, v in shipped("lexical").items() if k != "monitor_scores"}
    _, r = Guard("lexical", calibration=old).guard("Cells make ATP [1].", ["Cells make ATP."])
    assert r.guarantee_card["monitor"]["state"] == "off" and "recalibrate" in r.guarantee_card["monitor"]["reason"]


ADMIN = "a-test-admin-token-0123456789"


def test_labels_need_the_admin_token():
    with running(ServeConfig(verifier="lexical", admin_token=ADMIN)) as url, httpx.Client(timeout=30) as c:
        body = {"missed": 9, "unsupported": 10}
        assert c.post(f"{url}/v1/monitor/labels", json=body).status_code == 401
        wrong = c.post(f"{url}/v1/monitor/labels", json=body, headers={"Authorization": f"Bearer {ADMIN}x"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        assert c.get(f"{url}/v1/monitor").json()["default"]["monitor"]["state"] != "void"  # nothing changed
        ok = c.post(f"{url}/v1/monitor/labels", json=body, headers={"Authorization": f"Bearer {ADMIN}"})
        assert ok.status_code == 200 and ok.json()["monitor"]["state"] == "void"
        assert c.post(f"{url}/v1/monitor/reset", json={"by": "mallory"}).status_code == 401
        reset = c.post(f"{url}/v1/monitor/reset", json={"by": "ops"}, headers={"Authorization": f"Bearer {ADMIN}"})
        mon = reset.json()["monitor"]
        assert reset.status_code == 200 and mon["state"] == "ok" and mon["labels"]["unsupported"] == 0
        assert mon["history"][-1]["by"].startswith("ops (127.0.0.1") and mon["history"][-1]["was"] == "void"
    with running(ServeConfig(verifier="lexical")) as url, httpx.Client(timeout=30) as c:
        none = c.post(f"{url}/v1/monitor/labels", json=body, headers={"Authorization": f"Bearer {ADMIN}"})
        assert none.status_code == 403 and "--admin-token-file" in none.text


def test_the_card_and_the_state_over_http():
    with running(ServeConfig(verifier="lexical", admin_token=ADMIN)) as url, \
            httpx.Client(timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}) as c:
        r = c.post(f"{url}/v1/guard", json={"answer": EXAMPLE["answer"], "passages": EXAMPLE["passages"]}).json()
        card = r["results"][0]["report"]["guarantee_card"] if "results" in r else r["report"]["guarantee_card"]
        assert card["monitor"]["state"] in ("ok", "suspect") and card["monitor"]["deployed_scores"] == 3
        assert c.get(f"{url}/v1/monitor").json()["default"]["monitor"]["deployed_scores"] == 3
        bad = c.post(f"{url}/v1/monitor/labels", json={"missed": 3, "unsupported": 2})
        assert bad.status_code == 422 and "missed" in bad.text
        assert c.post(f"{url}/v1/monitor/labels", json={"profile": "nope", "missed": 0, "unsupported": 2}).status_code == 422
        v = c.post(f"{url}/v1/monitor/labels", json={"missed": 9, "unsupported": 10})
        assert v.status_code == 200 and v.json()["monitor"]["state"] == "void"
        metrics = c.get(f"{url}/metrics").text
        assert 'citebound_monitor_state{group="pooled",profile="default",state="void"} 1.0' in metrics
        assert 'citebound_monitor_state{group="pooled",profile="default",state="ok"} 0.0' in metrics
        r = c.post(f"{url}/v1/guard", json={"answer": EXAMPLE["answer"], "passages": EXAMPLE["passages"]}).json()
        card = r["results"][0]["report"]["guarantee_card"] if "results" in r else r["report"]["guarantee_card"]
        # the betting e-process by hand: 20 bets lam = f / alpha, f = (j + .5) / 20 * .98; 9 misses and 1 catch of 10
        fs = [(j + 0.5) / 20 * 0.98 for j in range(20)]
        e_value = sum((1 + 9 * f) ** 9 * (1 - f) for f in fs) / 20
        assert card["monitor"]["state"] == "void" and card["monitor"]["labels"] == {
            "missed": 9, "unsupported": 10, "p_value": pytest.approx(9.1e-9, rel=0.01),
            "e_value": pytest.approx(e_value, rel=1e-5), "void_at": 10.0, "void_after": 10}


def test_citebound_monitor_reads_guarded_reports_offline(tmp_path, capsys):
    from citebound.cli.main import main

    g = Guard("lexical")
    lines = []
    for _ in range(3):
        _, r = g.guard(EXAMPLE["answer"], EXAMPLE["passages"])
        lines.append(json.dumps({"report": r.to_dict()}))
    lines.insert(1, json.dumps({"id": "x", "error": "passage 0 has empty or missing text"}))  # a refused answer
    (tmp_path / "g.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "l.jsonl").write_text("\n".join(json.dumps({"label": 0, "passed": i < 9}) for i in range(10)) + "\n")
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical",
                 "--labels", str(tmp_path / "l.jsonl")]) == 0
    out, err = capsys.readouterr()
    card = json.loads(out)
    assert card["monitor"]["deployed_scores"] == 9 and card["monitor"]["state"] == "void"  # 3 reports x 3 scores
    assert card["monitor"]["labels"]["missed"] == 9 and "1 lines without a report skipped" in err
    # the same scores in the same order give the library guard's martingale (the same seeded draws)
    assert card["monitor"]["martingale"] == pytest.approx(g.keeper.monitor.value, rel=1e-6)
    (tmp_path / "bad.jsonl").write_text('{"label": 2, "passed": true}\n')
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical",
                 "--labels", str(tmp_path / "bad.jsonl")]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_the_monitor_takes_one_calibration_and_one_verifier_only(tmp_path, capsys):
    """#52 item 5: reports of another calibration (another hash) and labels of another verifier are skipped and
    counted; a file with none of this calibration's is refused, as is one with no report at all."""
    from citebound.calibrations import shipped
    from citebound.cli.main import main

    g = Guard("lexical")
    ours = [g.guard(EXAMPLE["answer"], EXAMPLE["passages"])[1].to_dict() for _ in range(2)]
    foreign = json.loads(json.dumps(ours[0]))
    foreign["guarantee_card"]["calibration_hash"] = "0" * 16  # guarded under another calibration
    foreign["audit"] = [dict(a, score=0.0) for a in foreign["audit"]] * 8  # 24 scores that would turn it suspect
    rows = [{"report": ours[0]}, {"report": foreign}, {"report": ours[1]}]
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    vhash = shipped("lexical")["verifier_hash"]
    labels = [{"label": 0, "passed": True, "verifier_hash": "f" * 16}] * 5 + [{"label": 0, "passed": False,
                                                                               "verifier_hash": vhash}] * 3
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical",
                 "--labels", str(tmp_path / "l.jsonl")]) == 0
    out, err = capsys.readouterr()
    card = json.loads(out)
    assert card["monitor"]["deployed_scores"] == 6  # 2 reports x 3 scores; the 24 foreign ones left out
    assert "1 reports of another calibration" in err and "5 of another verifier skipped" in err
    assert card["monitor"]["labels"]["missed"] == 0 and card["monitor"]["labels"]["unsupported"] == 3
    assert f"alarm at {card['monitor']['alarm_at']:g}" in err  # as the card has it (2/delta for the robust alarm)
    # nothing of this calibration: refused, naming the hash found
    (tmp_path / "f.jsonl").write_text(json.dumps({"report": foreign}) + "\n")
    assert main(["monitor", "--reports", str(tmp_path / "f.jsonl"), "--verifier", "lexical"]) == 2
    assert "0000000000000000 (1)" in capsys.readouterr().err
    (tmp_path / "e.jsonl").write_text(json.dumps({"id": "x", "error": "refused"}) + "\n")
    assert main(["monitor", "--reports", str(tmp_path / "e.jsonl"), "--verifier", "lexical"]) == 2
    assert "holds no guarded reports" in capsys.readouterr().err
    (tmp_path / "lf.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels[:5]))
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical",
                 "--labels", str(tmp_path / "lf.jsonl")]) == 2
    assert "another verifier's hash" in capsys.readouterr().err


def test_flag_all_fails_closed_while_the_store_cannot_say_whether_the_monitor_is_void(tmp_path):
    """The monitor's stored state turns unreadable (a row that is not a state object): the guard cannot rule out
    void, so under flag-all nothing passes; under annotate the verdicts go on and the card says unavailable."""
    import sqlite3

    db = tmp_path / "s.sqlite"
    flag_all = Guard("lexical", on_void="flag-all", state=f"sqlite:///{db}")
    annotate = Guard("lexical", state=f"sqlite:///{db}")
    _, before = flag_all.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    assert before.verified + before.reattributed == 3
    with sqlite3.connect(db) as c:
        c.execute("UPDATE monitor_state SET value = '[1]'")
    _, f = flag_all.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    _, a = annotate.guard(EXAMPLE["answer"], EXAMPLE["passages"])
    assert f.guarantee_card["monitor"]["state"] == "unavailable" and flag_all.keeper.flag_all
    assert (f.verified, f.reattributed, f.flagged, f.invalid) == (0, 0, 3, 1)
    assert a.verified + a.reattributed == 3 and a.guarantee_card["monitor"]["state"] == "unavailable"


def test_monitor_labels_read_passed_from_each_field_and_skip_cant_tell(tmp_path, capsys):
    """A label's 'passed' comes from 'passed', else the guard's own action, else score > tau, the tau in force
    (the shipped calibration's PAC tau, 0.368..., not its conformal 0.357...): a score exactly at it failed the
    guard (not a miss), one ulp above passed it (a miss). Null labels are counted and skipped. Misses: passed=True,
    guard_action verified, and tau+ulp: 3 of 6 unsupported."""
    import math

    from citebound.calibration.files import in_force
    from citebound.calibrations import shipped
    from citebound.cli.main import main

    kind, tau, _ = in_force(shipped("lexical"))
    assert kind == "pac" and tau != shipped("lexical")["tau"]
    g = Guard("lexical")
    (tmp_path / "g.jsonl").write_text(json.dumps({"report": g.guard(EXAMPLE["answer"], EXAMPLE["passages"])[1].to_dict()})
                                      + "\n")
    labels = [{"label": 0, "passed": True}, {"label": 0, "passed": False},
              {"label": 0, "guard_action": "verified"}, {"label": 0, "guard_action": "flagged"},
              {"label": 0, "score": tau}, {"label": 0, "score": math.nextafter(tau, 2.0)},
              {"label": 1, "score": 0.99}, {"label": None}, {"label": None, "score": 1.0}]
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical",
                 "--labels", str(tmp_path / "l.jsonl")]) == 0
    out, err = capsys.readouterr()
    card = json.loads(out)
    assert (card["monitor"]["labels"]["missed"], card["monitor"]["labels"]["unsupported"]) == (3, 6)
    assert "labels: 6 unsupported, 3 of them passed by the guard; 2 can't-tell skipped" in err
    (tmp_path / "n.jsonl").write_text(json.dumps({"label": 0}) + "\n")
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical",
                 "--labels", str(tmp_path / "n.jsonl")]) == 2
    err = capsys.readouterr().err
    # the calibration has a tau: the line says only what the record lacks
    assert "n.jsonl:1: no 'passed' and no score to tell whether the guard passed it\n" in err


def test_monitor_refuses_a_calibration_it_cannot_monitor(tmp_path, capsys):
    from citebound.calibrations import shipped
    from citebound.cli.main import main

    g = Guard("lexical")
    (tmp_path / "g.jsonl").write_text(json.dumps({"report": g.guard(EXAMPLE["answer"], EXAMPLE["passages"])[1].to_dict()})
                                      + "\n")
    old = {k: v for k, v in shipped("lexical").items() if not k.startswith("monitor_scores")}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--calibration", str(tmp_path / "old.json")]) == 2
    assert "the calibration carries no monitor_scores (made before citebound 0.3)" in capsys.readouterr().err
    assert main(["monitor", "--reports", str(tmp_path / "g.jsonl"), "--verifier", "lexical", "--group", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
