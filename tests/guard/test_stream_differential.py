"""Streaming = whole: a streamed answer, guarded sentence by sentence, joins to the text the whole answer
gets (byte for byte, with and without removal) and the same report, over many generated answers split
at random points: several citations per sentence, ranges, invalid pointers, leading markers after a
sentence's end, markers split across pieces ([1 + 2]), hidden markup, newlines and characters outside the
BMP split between their two UTF-16 halves."""
import random

import pytest

from citebound import Guard
from citebound.guarding.stream import SentenceHold, commit_point

PASSAGES = ["Statins lower LDL cholesterol in adults with high cardiovascular risk.",
            "Mitochondria produce ATP through oxidative phosphorylation in the inner membrane.",
            "The Great Barrier Reef has lost half of its coral cover since 1995.",
            "Vaccination reduced measles incidence by more than ninety percent.",
            "Deep sea vents host chemosynthetic bacteria that fix carbon without light."]
CLAIMS = ["Statins lower LDL cholesterol", "Mitochondria produce ATP", "The reef lost half its coral",
          "Measles fell after vaccination", "Vents host chemosynthetic bacteria", "Café owners disagree 😀",
          "Results vary — see 𝔸 below", "No evidence exists here"]
MARKERS = ["[1]", "[2]", "[3]", "[4]", "[5]", "[1, 2]", "[2-4]", "[9]", "[1][3]", "[12]", "[1–2]", "[0]"]


def answer(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 7)):
        claim = rng.choice(CLAIMS)
        marks = "".join(rng.choice(MARKERS) for _ in range(rng.randint(0, 3)))
        end = rng.choice([".", "!", "?", "."])
        form = rng.random()
        if form < 0.25 and marks:
            s = f"{claim}{end} {marks}"  # the markers lead the next piece: they belong to this sentence
        elif form < 0.35:
            s = f"{claim} <!-- hidden [3]. Text --> more {marks}{end}"
        elif form < 0.42:
            s = f"{claim} <span hidden>[2] secret. Claim</span> {marks}{end}"
        else:
            s = f"{claim} {marks}{end}"
        out.append(s)
        out.append(rng.choice([" ", " ", "  ", "\n", "\n\n", " \n"]))
    return "".join(out).rstrip() if rng.random() < 0.7 else "".join(out)


def pieces(text: str, rng: random.Random) -> list[str]:
    """The text cut at random UTF-16 code-unit boundaries, as JSON strings carry it: a character outside
    the BMP may arrive as its two surrogate halves in two pieces."""
    units = text.encode("utf-16-le", "surrogatepass")
    cuts = sorted(rng.sample(range(1, len(units) // 2), min(len(units) // 2 - 1, rng.randint(1, 40)))) if len(units) > 2 else []
    out, prev = [], 0
    for c in [*cuts, len(units) // 2]:
        out.append(units[2 * prev:2 * c].decode("utf-16-le", "surrogatepass"))
        prev = c
    return out


def streamed(guard: Guard, parts: list[str]):
    out = list(guard.stream(parts, PASSAGES))
    return "".join(x for x in out if isinstance(x, str)), out[-1]


def same_report(a, b) -> None:
    da, db = a.to_dict(), b.to_dict()
    da.pop("guarantee_card"), db.pop("guarantee_card")  # the monitor's count moves with every call
    assert da == db


@pytest.mark.parametrize("remove", [False, True])
def test_streamed_equals_whole_on_generated_answers(remove):
    g = Guard("lexical", action="remove" if remove else "annotate")
    rng = random.Random(7 + remove)
    checked = split_markers = split_pairs = 0
    for _ in range(300):
        text = answer(rng)
        parts = pieces(text, rng)
        whole, report = g.guard(text, PASSAGES)
        got, rep = streamed(g, parts)
        assert got == whole, (text, parts)
        same_report(rep, report)
        checked += 1
        joined = ""
        for p in parts[:-1]:
            joined += p
            split_markers += joined.endswith("[1") or joined.endswith("[")
            split_pairs += "\ud800" <= joined[-1] <= "\udbff"
    assert checked == 300 and split_markers > 20 and split_pairs > 5  # the hard splits did happen


def test_one_character_at_a_time_and_all_at_once():
    g = Guard("lexical")
    rng = random.Random(3)
    for _ in range(40):
        text = answer(rng)
        whole, report = g.guard(text, PASSAGES)
        for parts in (list(text), [text]):
            got, rep = streamed(g, parts)
            assert got == whole
            same_report(rep, report)


def test_sentences_are_released_as_they_complete():
    hold = SentenceHold()
    assert hold.feed("Statins lower LDL [1]. Mito") == "Statins lower LDL [1]. "
    assert hold.feed("chondria make ATP. [2") == ""  # '[2' may still become a marker of the sentence before
    assert hold.feed("] Next") == "Mitochondria make ATP. [2] "
    assert hold.finish() == "Next"
    assert commit_point("A [1]. <!-- open. B. C") == 0  # an open comment may hide what follows
    assert commit_point("A [1]. B < c. D. E") == 7  # "A [1]. " only: "<" may still become a tag hiding the rest


def test_held_text_and_answer_length_are_bounded():
    from citebound.text.limits import LimitExceeded, Limits

    hold = SentenceHold(Limits(max_stream_held_chars=1000))
    with pytest.raises(LimitExceeded, match="max_stream_held_chars"):
        for _ in range(300):
            hold.feed("word ")
    hold = SentenceHold(Limits(max_answer_chars=50))
    with pytest.raises(LimitExceeded, match="max_answer_chars"):
        for _ in range(20):
            hold.feed("A b. ")


def test_a_block_stops_the_stream_at_the_sentence_that_passes_the_budget():
    g = Guard("lexical", action="block", block_above=0.4)
    text = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [1]. Mitochondria produce ATP [2]."
    out = list(g.stream(list(text), PASSAGES))
    sent, report = "".join(x for x in out if isinstance(x, str)), out[-1]
    # after sentence 1: 0 of 1 failed; sentence 2 fails (nothing supports it): 1 of 2 = 0.5 > 0.4, blocked
    # before its text goes out; sentence 3 is never read
    assert sent == "Statins lower LDL cholesterol [1]."
    assert report.blocked and (report.n_citations, report.verified, report.flagged) == (2, 1, 1)
    assert "1 sentences were" in report.block_reason
    # the whole answer, not streamed: withheld (1 of 3 = 0.33 is not past 0.4, so use 0.3)
    text3, rep3 = Guard("lexical", action="block", block_above=0.3).guard(text, PASSAGES)
    assert text3 == "" and rep3.blocked and rep3.n_citations == 3
