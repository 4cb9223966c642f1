"""The assembled guard's policy at its edges (#56, round 51): what it refuses at construction, the block reason's
wording under each uncited policy, and a stream that joins to the unstreamed answer under block (no segment blocked
on its own budget, the trailing whitespace kept). A fixed scorer: a claim scores 0.9 when the cited passage holds
its first word, else 0.1; the threshold is 0.5."""
from __future__ import annotations

import numpy as np
import pytest

from citebound import Guard
from citebound.guarding.guard import GuardInputError

P = ["Statins lower LDL cholesterol.", "Mitochondria make ATP."]


def first_word(claims, passages):
    s = np.array([0.9 if c.split()[0].lower() in p.lower() else 0.1 for c, p in zip(claims, passages)])
    return s, s > 0.5


def guard(**kw):
    return Guard(first_word, reattributor=None, threshold=0.5, **kw)


@pytest.mark.parametrize("block_above,ok", [(False, False), (True, False), (None, False), (1.0, False), (-0.1, False),
                                            (0.0, True), (0.99, True), (0, True)])
def test_block_above_is_a_number_in_0_1(block_above, ok):
    if ok:
        assert guard(action="block", block_above=block_above).block_above == float(block_above)
    else:
        with pytest.raises(GuardInputError, match="action 'block' needs block_above in \\[0, 1\\)"):
            guard(action="block", block_above=block_above)


def test_a_state_the_guard_cannot_open_is_bad_input():
    with pytest.raises(GuardInputError, match="--state 'ftp://x': expected memory://"):
        guard(state="ftp://x")


@pytest.mark.parametrize("uncited,budget,reason", [
    # one flagged citation of one, one sentence citing nothing: (1 + 1) / (1 + 1) under flag, 1 / 1 under ignore
    ("flag", 1.0, "review budget 1 is past --block-above 0.1: 1 of 1 citations failed or could not be checked, and 1 "
                  "sentences cite nothing"),
    ("ignore", 1.0, "review budget 1 is past --block-above 0.1: 1 of 1 citations failed or could not be checked"),
])
def test_the_block_reason_counts_uncited_sentences_only_under_flag(uncited, budget, reason):
    text, rep = guard(action="block", block_above=0.1, uncited=uncited).guard(
        "Aspirin cures everything [1]. The sky is green.", P)
    assert text == "" and rep.blocked and rep.review_budget == budget and rep.block_reason == reason


def test_a_stream_under_block_joins_to_the_unstreamed_answer():
    """Four sentences, the second's citation flagged: alone its budget is 1, past 0.5, but the answer's so far is
    1 of 2 = 0.5 and the whole answer's 1 of 4: nothing is withheld. The answer's trailing blank lines are kept."""
    answer = "Statins lower LDL [1]. Aspirin cures gout [2]. Mitochondria make ATP [2]. Statins are cheap [1].\n\n"
    g = guard(action="block", block_above=0.5)
    whole, rep = g.guard(answer, P)
    assert not rep.blocked and rep.review_budget == 0.25 and whole.endswith("[1].\n\n")
    pieces = [answer[i:i + 7] for i in range(0, len(answer), 7)]
    out = list(g.stream(pieces, P))
    *texts, report = out
    assert "".join(texts) == whole and not report.blocked and report.flagged == 1
