"""The service's shared state (citebound/serving/state.py) at its own level: the work tokens a request leaves behind,
drain's cancel, the statuses a late or a gone request is answered with, the withheld text in a 403, and the
settings that reach the guard."""
import asyncio
import json

import pytest

from citebound.scoring.deadline import WorkToken
from citebound.serving.state import ClientGone, ServeConfig, ServiceState, blocked, refuse, timed_out
from citebound.text.limits import LimitExceeded


def test_a_request_leaves_no_work_token_behind_done_or_failed():
    st = ServiceState(ServeConfig(verifier="lexical"))
    assert asyncio.run(st.run_guarded(lambda: 7)) == 7
    assert st.tokens == set()

    def fails():
        raise ValueError("bad")

    with pytest.raises(ValueError):
        asyncio.run(st.run_guarded(fails))
    assert st.tokens == set()


def test_drain_cancels_every_request_still_running():
    st = ServiceState(ServeConfig(verifier="lexical"))
    tokens = [WorkToken(None) for _ in range(3)]
    st.tokens.update(tokens)
    st.cancel_all()
    assert [t.cancelled for t in tokens] == [True, True, True]


@pytest.mark.parametrize("error,status", [(None, 504), (TimeoutError(), 504), (ClientGone(), 499)])
def test_a_late_request_is_504_and_one_whose_client_left_is_499(error, status):
    r = timed_out(2.5, error)
    assert r.status_code == status
    if status == 504:
        assert "2.5 s" in json.loads(r.body)["detail"]


def test_a_refusal_past_a_limit_names_the_limit():
    r = refuse(LimitExceeded("the answer has 9 passages", "max_passages", 8))
    assert r.status_code == 422
    assert json.loads(r.body) == {"detail": "the answer has 9 passages; the limit is 8 (max_passages)",
                                  "limit": "max_passages"}
    assert json.loads(refuse(ValueError("no answer")).body) == {"detail": "no answer"}


@pytest.mark.parametrize("error_shape", [False, True])
def test_a_withheld_answers_403_carries_none_of_its_text(error_shape):
    """The proxy's caller never saw the upstream's answer: neither face of the 403 may carry its sentences."""
    from citebound.guarding.core import guard_answer
    from citebound.scoring.loader import load_scorer

    secret = "Statins cure every known cancer"
    _, report = guard_answer(f"{secret} [1]. Aspirin thins blood [2].", ["Statins lower LDL.", "Aspirin thins blood."],
                             load_scorer("lexical"))
    report.block_reason = "review budget 0.5 above 0.2"
    assert secret in json.dumps(report.to_dict())  # the report itself holds the claim
    r = blocked(report, error_shape=error_shape, show_text=False)
    body = json.loads(r.body)
    assert r.status_code == 403 and secret not in r.body.decode()
    shown = body["citebound"]["report"] if error_shape else body["report"]
    assert [a["claim"] for a in shown["audit"]] == [None, None]
    assert secret in blocked(report, error_shape=error_shape).body.decode()  # the guard's own caller sent the text


def test_a_shared_store_is_checked_and_a_process_one_is_not(tmp_path):
    from citebound.calibration.state import CheckedStore

    assert isinstance(ServiceState(ServeConfig(state=f"sqlite:///{tmp_path}/s.db")).store, CheckedStore)
    assert not isinstance(ServiceState(ServeConfig(state="memory://")).store, CheckedStore)


def test_the_failure_policies_reach_the_guard_each_as_set():
    from citebound.scoring.loader import load_scorer

    st = ServiceState(ServeConfig(verifier="lexical", on_error="open", on_void="flag-all", uncited="ignore",
                                  action="block", block_above=0.25))
    st.registry.load(load_scorer("lexical"))
    g = st.guard_for(None)
    assert (g.on_error, g.uncited, g.action, g.block_above) == ("open", "ignore", "block", 0.25)
    assert st.registry.policy["on_void"] == "flag-all"


def test_a_held_answer_takes_nothing_more_once_blocked():
    """--action block, block above 0.1: the first sentence's one citation fails (the lexical verifier finds no
    word of it in the passage), so the answer is blocked at it; a later delta, even a supported sentence, is
    neither sent nor kept as the answer's text."""
    from citebound.scoring.loader import load_scorer
    from citebound.serving.held import HeldAnswer

    st = ServiceState(ServeConfig(verifier="lexical", action="block", block_above=0.1))
    st.scorer = load_scorer("lexical")
    st.registry.load(st.scorer)
    held = HeldAnswer(st, st.guard_for(None), ["Aspirin irreversibly inhibits platelet cyclooxygenase."], None, None)

    async def run():
        first = await held.feed("Mars has two small moons [1]. As")  # the next sentence's start ends the first
        assert held.block_report is not None and first == ""
        later = await held.feed("pirin irreversibly inhibits platelet cyclooxygenase [1]. It")
        return later, await held.finish()

    assert asyncio.run(run()) == ("", "")
    assert held.text() == "Mars has two small moons [1]. As"
    assert held.report().blocked and held.report().flagged == 1 and held.report().n_citations == 1


def test_work_that_fails_after_its_request_timed_out_is_not_logged_as_an_unretrieved_error():
    """The late outcome of work the client no longer waits for is read by the task's done callback: asyncio would
    otherwise report 'Task exception was never retrieved' for every late failure."""
    import gc
    import time

    st = ServiceState(ServeConfig(verifier="lexical", request_timeout_s=0.05))
    seen: list[dict] = []

    def late_failure():
        time.sleep(0.3)
        raise ValueError("late")

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: seen.append(ctx))
        try:
            await st.run_guarded(late_failure)
        except TimeoutError:
            pass
        else:
            raise AssertionError("the request should have timed out")
        await asyncio.sleep(0.6)  # the worker thread ends, and its task with ValueError
        gc.collect()
        await asyncio.sleep(0)

    asyncio.run(main())
    assert [c.get("message") for c in seen] == []
