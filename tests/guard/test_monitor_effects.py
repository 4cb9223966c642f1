"""What the monitor routes and the metrics must say, observed: labels for a group that falls back to the pooled
calibration go to the pooled monitor and answer with its card; the admin body's size limit at its boundary; the
token's scheme in any case (HTTP's auth schemes are case-insensitive); every monitor state exported, one at 1;
uncited sentences counted one by one; while the store cannot say, no martingale is claimed and labels are a 503
that says when to come back."""
import os
import signal
import time

import httpx
import pytest

pytest.importorskip("fastapi")
from guard_cases import write_calibration  # noqa: E402
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

TOKEN = "a-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STATES = ("ok", "suspect", "void", "off", "unavailable")


def serve_lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cals")
    (folder / "lab.json").write_text(write_calibration(tmp_path_factory.mktemp("cal")).read_text())
    return running(ServeConfig(verifier="lexical", calibrations=str(folder), admin_token=TOKEN))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with serve_lab(tmp_path_factory) as url:
        yield url


def _states(metrics: str, profile: str, group: str) -> dict[str, float]:
    out = {}
    for line in metrics.splitlines():
        head = f'citebound_monitor_state{{group="{group}",profile="{profile}",state="'
        if line.startswith(head):
            out[line[len(head):].split('"')[0]] = float(line.rsplit(" ", 1)[1])
    return out


@pytest.fixture
def fresh_lab(tmp_path_factory):
    """A server of its own: the label counts below are totals, which the module's other tests would have moved."""
    with serve_lab(tmp_path_factory) as url:
        yield url


def test_labels_for_a_fallback_group_go_to_the_pooled_monitor_and_answer_with_its_card(fresh_lab):
    """The case table's calibration: group "small" has too few unsupported citations and uses the pooled tau 0.50;
    "big" has its own, 0.22. Labels for "small" are the pooled monitor's (its card: group pooled, tau 0.5); labels
    for "big" are big's own."""
    lab = fresh_lab
    small = httpx.post(f"{lab}/v1/monitor/labels", headers=AUTH,
                       json={"profile": "lab", "group": "small", "missed": 0, "unsupported": 3}).json()
    assert (small["group"], small["calibrated_on"], small["tau"]) == ("pooled", "pooled", 0.5)
    big = httpx.post(f"{lab}/v1/monitor/labels", headers=AUTH,
                     json={"profile": "lab", "group": "big", "missed": 1, "unsupported": 4}).json()
    assert (big["group"], big["calibrated_on"], big["tau"]) == ("big", "big", 0.22)
    mon = httpx.get(f"{lab}/v1/monitor").json()["lab"]
    assert (mon["monitor"]["labels"]["missed"], mon["monitor"]["labels"]["unsupported"]) == (0, 3)
    assert (mon["groups"]["big"]["monitor"]["labels"]["missed"], mon["groups"]["big"]["monitor"]["labels"]["unsupported"]) == (1, 4)


@pytest.mark.parametrize("size,status", [(65536, 200), (65537, 413)])
def test_an_admin_body_of_65536_bytes_is_read_and_one_more_is_a_413(lab, size, status):
    head, tail = b'{"profile": "lab", "missed": 0, "unsupported": 1', b"}"
    body = head + b" " * (size - len(head) - len(tail)) + tail  # JSON allows the whitespace
    assert len(body) == size
    r = httpx.post(f"{lab}/v1/monitor/labels", content=body, headers=AUTH | {"content-type": "application/json"})
    assert r.status_code == status, r.text[:300]


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_the_token_scheme_is_read_in_any_case(lab, scheme):
    r = httpx.post(f"{lab}/v1/monitor/labels", headers={"Authorization": f"{scheme} {TOKEN}"},
                   json={"profile": "lab", "missed": 0, "unsupported": 1})
    assert r.status_code == 200, r.text


def test_every_monitor_state_is_exported_with_exactly_the_current_one_at_1(lab):
    metrics = httpx.get(f"{lab}/metrics").text
    for group in ("pooled", "big"):
        got = _states(metrics, "lab", group)
        assert sorted(got) == sorted(STATES) and sum(got.values()) == 1.0, got


def test_uncited_sentences_are_counted_one_by_one():
    """One answer with two uncited sentences and one cited, then one with none uncited: the counter says 2."""
    with running(ServeConfig(verifier="lexical")) as url:
        body = {"answers": [{"answer": "Statins lower LDL [1]. Aspirin is old. Cells divide.", "passages": ["Statins lower LDL."]},
                            {"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]}]}
        assert httpx.post(f"{url}/v1/guard", json=body).status_code == 200
        line = [x for x in httpx.get(f"{url}/metrics").text.splitlines() if x.startswith("citebound_uncited_sentences_total ")]
    assert line == ["citebound_uncited_sentences_total 2.0"]


def test_while_the_store_cannot_say_no_martingale_is_claimed_and_labels_say_when_to_retry(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    from test_state import _redis
    from test_store_down import _until

    p, url = _redis(tmp_path)
    try:
        with running(ServeConfig(verifier="lexical", state=url, admin_token=TOKEN)) as base, \
                httpx.Client(base_url=base, timeout=30) as c:
            m = c.get("/metrics").text
            assert 'citebound_monitor_martingale{group="pooled",profile="default"} 1.0' in m
            os.kill(p.pid, signal.SIGSTOP)
            _until(lambda: c.get("/readyz").status_code == 503, 5.0)
            m = c.get("/metrics").text
            assert 'citebound_monitor_martingale{group="pooled",profile="default"} NaN' in m
            assert _states(m, "default", "pooled") == {"ok": 0.0, "suspect": 0.0, "void": 0.0, "off": 0.0, "unavailable": 1.0}
            t = time.perf_counter()
            lab = c.post("/v1/monitor/labels", json={"missed": 0, "unsupported": 1}, headers=AUTH)
            assert lab.status_code == 503 and lab.headers["Retry-After"] == "5"
            assert time.perf_counter() - t < 1.0
    finally:
        os.kill(p.pid, signal.SIGCONT)
        p.terminate()
        p.wait(10)


def test_a_profile_without_a_monitor_refuses_labels_and_reset_saying_why(tmp_path):
    """A calibration made before monitor scores were kept: the profile guards, but has no drift monitor, so labels
    and a reset are refused (422) naming why, never acknowledged as if recorded."""
    import json

    from citebound.calibrations import shipped

    folder = tmp_path / "cals"
    folder.mkdir()
    old = {k: v for k, v in shipped("lexical").items() if not k.startswith("monitor_scores")}
    (folder / "old.json").write_text(json.dumps(old))
    with running(ServeConfig(verifier="lexical", calibrations=str(folder), admin_token=TOKEN)) as url:
        g = httpx.post(f"{url}/v1/guard", json={"answer": "Aspirin works [1].", "passages": ["Aspirin works."],
                                                "calibration": "old"})
        assert g.status_code == 200, g.text
        card = g.json()["report"]["guarantee_card"]
        assert card["monitor"]["state"] == "off" and "no monitor_scores" in card["monitor"]["reason"]
        r1 = httpx.post(f"{url}/v1/monitor/labels", headers=AUTH, json={"profile": "old", "missed": 1, "unsupported": 4})
        r2 = httpx.post(f"{url}/v1/monitor/reset", headers=AUTH, json={"profile": "old"})
    for r in (r1, r2):
        assert r.status_code == 422, r.text
        assert "no drift monitor on this guard (the calibration carries no monitor_scores" in r.text


def test_an_empty_admin_body_means_the_defaults_not_a_json_error(fresh_lab):
    """No body is the same request as ``{}``: the reset of the default profile's pooled monitor (the shipped lexical
    calibration's), recorded in its history, never a 422 about JSON."""
    empty = httpx.post(f"{fresh_lab}/v1/monitor/reset", headers=AUTH, content=b"")
    assert empty.status_code == 200, empty.text
    assert empty.json()["monitor"]["history"][-1]["by"].startswith("admin (")
    braces = httpx.post(f"{fresh_lab}/v1/monitor/reset", headers=AUTH, content=b"{}")
    assert braces.status_code == 200 and len(braces.json()["monitor"]["history"]) == 2
    labels = httpx.post(f"{fresh_lab}/v1/monitor/labels", headers=AUTH, content=b"")
    assert labels.status_code == 422 and {tuple(d["loc"]) for d in labels.json()["detail"]} == {
        ("body", "missed"), ("body", "unsupported")}


def test_the_token_may_follow_its_scheme_after_several_spaces(lab):
    """HTTP's credentials follow the scheme after one or more spaces (RFC 7235: 1*SP)."""
    r = httpx.post(f"{lab}/v1/monitor/labels", headers={"Authorization": f"Bearer   {TOKEN}"},
                   json={"profile": "lab", "missed": 0, "unsupported": 1})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("missed,unsupported,field", [(0, 0, "unsupported"), (-1, 1, "missed")])
def test_a_label_post_with_nothing_labelled_or_a_negative_count_is_refused(lab, missed, unsupported, field):
    r = httpx.post(f"{lab}/v1/monitor/labels", headers=AUTH,
                   json={"profile": "lab", "missed": missed, "unsupported": unsupported})
    assert r.status_code == 422 and [d["loc"] for d in r.json()["detail"]] == [["body", field]]


def test_a_profile_without_groups_has_no_groups_map(lab):
    mon = httpx.get(f"{lab}/v1/monitor").json()
    assert "groups" not in mon["default"] and sorted(mon["lab"]["groups"]) == ["big", "small"]


def test_a_groups_card_and_stream_speak_for_that_group(tmp_path):
    """A hand-written calibration whose group entry does not repeat its name: the group's card still names it.
    Once labels void that group's guarantee, a stream under the group says so in X-Citebound-Guarantee, and a
    stream under the pooled calibration does not."""
    import json

    from fake_stream import FakeStreamingOpenAI, Script

    cal = json.loads(write_calibration(tmp_path).read_text())
    del cal["groups"]["big"]["group"]
    folder = tmp_path / "cals"
    folder.mkdir()
    (folder / "lab.json").write_text(json.dumps(cal))
    text = "Statins lower LDL cholesterol [1]."
    with FakeStreamingOpenAI(lambda body: Script([text])) as up, \
            running(ServeConfig(verifier="lexical", calibrations=str(folder), admin_token=TOKEN, upstream=up.base_url)) as url:
        assert httpx.get(f"{url}/v1/monitor").json()["lab"]["groups"]["big"]["group"] == "big"
        v = httpx.post(f"{url}/v1/monitor/labels", headers=AUTH,
                       json={"profile": "lab", "group": "big", "missed": 9, "unsupported": 10})
        assert v.status_code == 200 and v.json()["monitor"]["state"] == "void"

        def header(group):
            extra = {"passages": ["Statins lower LDL cholesterol."], "calibration": "lab"} | (
                {"group": group} if group else {})
            with httpx.stream("POST", f"{url}/v1/chat/completions", timeout=30,
                              json={"model": "m", "messages": [], "stream": True, "citebound": extra}) as r:
                r.read()
                return r.headers["x-citebound-guarantee"]
        assert (header("big"), header(None)) == ("void", "ok")
