"""The work tokens by their definitions: what a cancelled token does to the futures it watches, when a merged
batch's token counts as cancelled, where the batch loop checks, and a deadline of zero."""
import time
from concurrent.futures import Future

import pytest

from citebound.scoring import deadline
from citebound.scoring.deadline import AllOf, AnyOf, Cancelled, WorkToken, checked


def test_a_watched_future_is_cancelled_with_its_token_before_or_after():
    tok = WorkToken(None)
    before = Future()
    tok.watch(before)
    assert not before.cancelled()
    tok.cancel()
    assert before.cancelled()
    after = Future()  # watched once the token is already cancelled: cancelled at once
    tok.watch(after)
    assert after.cancelled()
    running = Future()
    running.set_running_or_notify_cancel()  # a future already running cannot be cancelled; watching it is harmless
    tok.watch(running)
    assert not running.cancelled()


def test_a_zero_deadline_is_already_past():
    tok = WorkToken(0)
    time.sleep(0.002)
    assert tok.cancelled
    with pytest.raises(Cancelled):
        tok.check()
    assert not WorkToken(None).cancelled and not WorkToken(60).cancelled


def _cancelled():
    t = WorkToken(None)
    t.cancel()
    return t


@pytest.mark.parametrize("tokens,all_of,any_of", [
    # a job without a token (a library call merged into a service batch) is one that never gives up
    ([None, "live"], False, False),
    ([None, "gone"], False, True),
    (["gone", "gone"], True, True),
    (["gone", "live"], False, True),
    (["live"], False, False),
    (["gone"], True, True),
    ([None], False, False),
])
def test_a_merged_batch_token_by_its_members(tokens, all_of, any_of):
    made = [None if t is None else (_cancelled() if t == "gone" else WorkToken(None)) for t in tokens]
    assert AllOf(made).cancelled is all_of
    assert AnyOf(made).cancelled is any_of


def test_the_batch_loop_checks_before_each_item_not_after():
    """A request that is already gone gets not even its first batch; one cancelled during a batch gets no next one."""
    gone = _cancelled()
    it = checked([1, 2])
    with gone.active(), pytest.raises(Cancelled):
        next(it)
    tok = WorkToken(None)
    seen = []
    with tok.active(), pytest.raises(Cancelled):
        for item in checked([1, 2, 3]):
            seen.append(item)
            tok.cancel()  # cancelled while item 1 is in hand
    assert seen == [1]
    assert deadline.current() is None  # the token is no longer current outside its block
