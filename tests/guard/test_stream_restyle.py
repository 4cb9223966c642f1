"""A streamed answer that restyles itself stops where it does (#56's kind 2: an effect that must happen).

A stylesheet, a declarative shadow root or an <html>/<body> tag can change how all of an answer's text is drawn,
the text before it too, so the whole answer's guard fails every citation closed; a stream guarded sentence by
sentence has already sent the sentences before it. The stream therefore stops at the segment that holds one:
that segment and the rest are withheld, and the report is blocked and says how many sentences went out. Each
expected text and count is read off the answer by hand."""
from __future__ import annotations

import pytest
from stream_cases import PASSAGES
from test_stream_differential import streamed

from citebound import Guard
from citebound.text.visible import restyles

S1 = "Statins lower LDL cholesterol [1]."
S2 = "Mitochondria produce ATP [2]."


def stream(text: str, action: str = "annotate"):
    return streamed(Guard("lexical", action=action), list(text))


@pytest.mark.parametrize("markup,what", [
    ("<style>p{}</style>", "a stylesheet"),
    ('<link rel="stylesheet" href="x.css">', "a stylesheet"),
    ('<div><template shadowrootmode="open">x</template></div>', "a declarative shadow root"),
    ("<body hidden>", "an <html> or <body> tag"), ("</HTML>", "an <html> or <body> tag"),
])
@pytest.mark.parametrize("action", ["annotate", "remove"])
def test_the_stream_stops_at_the_sentence_that_restyles_the_answer(markup, what, action):
    """Two sentences go out; the third holds the markup: it and the fourth are withheld."""
    text = f"{S1} {S2} Then {markup} more [1]. Last [2]."
    sent, report = stream(text, action)
    assert sent == f"{S1} {S2}"
    assert report.blocked and f"the answer holds {what}" in report.block_reason
    assert "(2 sentences were sent)" in report.block_reason
    assert restyles(text) == what


def test_markup_in_the_first_sentence_sends_nothing():
    sent, report = stream(f"<style>p{{}}</style>{S1} {S2}")
    assert sent == "" and report.blocked and "(0 sentences were sent)" in report.block_reason


@pytest.mark.parametrize("text", [
    f"{S1} <span style=\"color:#fff\">Hidden</span> ok [1]. {S2}",  # an element's own style restyles only itself
    f"{S1} A body of work [1]. {S2}",  # the word, not the tag
])
def test_an_answer_without_such_markup_streams_to_the_end_as_the_whole(text):
    sent, report = stream(text)
    whole, whole_report = Guard("lexical").guard(text, PASSAGES)
    assert sent == whole and not report.blocked
    assert [a.action for a in report.audit] == [a.action for a in whole_report.audit]


def test_markup_between_two_sentences_goes_with_the_first_and_withholds_it():
    """Hidden markup in the space after a sentence belongs to that sentence's segment (a segment runs to the next
    sentence's own start): the first sentence is withheld with it."""
    sent, report = stream(f"{S1} <style>p{{}}</style>{S2} {S1}")
    assert sent == "" and report.blocked and "(0 sentences were sent)" in report.block_reason
