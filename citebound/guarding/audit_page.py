"""One self-contained HTML page for a guard run: what a reviewer opens.

No network, no external assets, no script: every citation of every answer is
a coloured chip (verified / re-attributed / flagged / invalid) whose evidence
window and score show on hover or keyboard focus, and a click jumps to the
evidence row below the answer, which says why a citation failed (its score
against the rule, and what re-attribution tried). The counts, the review
budget, the calibration's guarantee line and the drift monitor's state head the
page. It opens filtered to what needs a person (answers with a citation to
review or a sentence that cites nothing, and only those rows); "all" shows
everything (a CSS-only switch).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from citebound.guarding.guard import ACTIONS
from citebound.guarding.report import pooled_review_budget, why
from citebound.text.citations import sentences

COLOURS = {"verified": "#1a7f37", "reattributed": "#0969da", "flagged": "#bf8700", "invalid": "#cf222e"}
LABELS = {"verified": "verified", "reattributed": "re-attributed", "flagged": "flagged", "invalid": "invalid",
          "unverified": "could not be checked"}

_CSS = """
body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f8fa;color:#1f2328}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:18px 28px}
h1{font-size:21px;margin:0 0 6px} h2{font-size:17px;margin:0 0 8px}
.counts{display:flex;gap:10px;flex-wrap:wrap;margin:10px 0 4px}
.count{border-radius:6px;padding:4px 10px;color:#fff;font-weight:600}
.count.total{background:#57606a}.budget{font-size:16px;font-weight:700;margin-top:6px}
.guarantee{margin-top:6px;color:#57606a}.monitor{margin-top:4px;color:#57606a}
.sent.uncited{text-decoration:underline dotted #9a6700}.rule{color:#57606a;font-size:13px}
main{padding:18px 28px;max-width:1100px}
section.answer{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:16px 20px;margin-bottom:18px}
.answer-counts{font-size:13px;color:#57606a;margin-bottom:8px}
.text{white-space:pre-wrap}
.sent.review{background:#fff8c5}
.cite{position:relative;display:inline-block;white-space:nowrap;border-radius:4px;padding:0 4px;margin:0 1px;color:#fff;
 font-weight:600;font-size:13px;text-decoration:none;cursor:pointer}
.cite .tip{display:none;position:absolute;z-index:5;left:0;top:1.7em;width:420px;background:#fff;color:#1f2328;
 border:1px solid #d0d7de;border-radius:6px;padding:8px 10px;font-weight:400;box-shadow:0 4px 14px #0002;white-space:normal}
.cite:hover .tip,.cite:focus .tip{display:block}
table{border-collapse:collapse;width:100%;margin-top:12px;font-size:13px}
th,td{border-top:1px solid #d0d7de;padding:6px 8px;text-align:left;vertical-align:top}
tr:target{outline:3px solid #0969da}
.evidence{font-family:ui-monospace,monospace;font-size:12px;background:#f6f8fa;padding:4px 6px;border-radius:4px}
.guarded{margin-top:10px;font-size:13px;color:#57606a}
.why{font-size:12px;color:#6e4b00}
.filter{margin:10px 28px 0;font-size:14px}.filter label{margin-right:8px;cursor:pointer;padding:3px 10px;
 border:1px solid #d0d7de;border-radius:12px;background:#fff}
#show-review:checked~.filter label[data-filter=review],#show-all:checked~.filter label[data-filter=all]{
 background:#0969da;border-color:#0969da;color:#fff;font-weight:600}
.legend{margin:6px 28px 0;font-size:13px;color:#57606a}.key-review{background:#fff8c5;color:inherit}
.key-uncited{text-decoration:underline dotted #9a6700}
#show-review:checked~main section.answer.clean{display:none}
#show-review:checked~main tr.passes{display:none}
#show-review:checked~.filter .all-hint{display:none}
"""


@dataclass
class AuditEntry:
    """One guarded answer as the page shows it."""

    id: str
    answer: str
    guarded_answer: str | None  # None: withheld (--action block)
    report: Mapping[str, Any]


def _style() -> str:
    colours = "".join(f".cite.{a},.count.{a}{{background:{c}}}" for a, c in COLOURS.items())
    return f"<style>{_CSS}{colours}</style>"


def _evidence(a: Mapping[str, Any]) -> Any:
    """The evidence a citation's tip and row show: where it was moved to, for a re-attributed one."""
    return a.get("new_evidence") if a["action"] == "reattributed" else a.get("evidence")


def _tip(a: Mapping[str, Any]) -> str:
    score = "n/a" if a.get("score") is None else f"{a['score']:.3f}"
    lines = [f"<b>[{_label(a)}] {LABELS[a['action']]}</b> &middot; score {score}"]
    if a["action"] == "reattributed":
        lines.append(f"moved to [{a['new_pointer']}] (score {a['new_score']:.3f})")
    if a.get("reason"):
        lines.append(escape(a["reason"]))
    ev = _evidence(a)
    if ev:
        text = snapped(ev)
        lines.append(f"passage [{ev['passage']}] chars {ev['start']}&ndash;{ev['end']}: "
                     f"<span class=\"evidence\">{escape(text[:300])}{'&hellip;' if len(text) > 300 else ''}</span>")
    return "<br>".join(lines)


def snapped(ev: Mapping[str, Any], window: int = 600) -> str:
    """An evidence window's text without the word it cuts at either end: a window that starts inside the
    passage loses its first partial word, one cut at the window size its last (each marked with an ellipsis)."""
    text = str(ev["text"])
    if int(ev.get("start", 0)) > 0 and text[:1].isalnum():
        cut = text.find(" ")
        text = "\u2026" + (text[cut + 1:] if 0 <= cut < 40 else text)
    if len(str(ev["text"])) >= window and text[-1:].isalnum():
        cut = text.rfind(" ")
        text = (text[:cut] if cut > len(text) - 40 else text) + "\u2026"
    return text


def _label(a: Mapping[str, Any]) -> str:
    """A citation as the page shows it: its number, or (a bracket the guard could not read) its text; a citation
    carried as data (a zero-width span where it attaches: docs/PROXY.md) shows its kind beside its passage."""
    spans = a.get("spans") or []
    if spans and spans[0][0] == spans[0][1]:
        kind = str(a.get("marker", "")).rpartition("(")[2].rstrip(")")
        return escape(f"{a['cited']} {kind}" if a["cited"] >= 0 else kind)
    return str(a["cited"]) if a["cited"] >= 0 else escape(str(a.get("marker", "?")).strip("[]"))


def _answer_html(i: int, e: AuditEntry) -> str:
    audit = list(e.report.get("audit", []))
    chips: dict[int, tuple[int, list[int]]] = {}  # marker start -> (end, audit indices)
    for j, a in enumerate(audit):
        for start, end in a["spans"]:
            chips.setdefault(start, (end, []))[1].append(j)
    review = {a["sentence_index"] for a in audit if a["action"] in ("flagged", "invalid", "unverified")}
    uncited = {int(lo) for lo, _ in e.report.get("uncited_sentences", [])}  # sentences nothing checked
    sent_of = {}
    for s in sentences(e.answer):
        sent_of[s.start] = (s.end, s.index)
    out, pos = [], 0
    open_sent_end = None
    marks = sorted(set(chips) | set(sent_of))
    for start in marks:
        if start < pos:
            continue
        out.append(escape(e.answer[pos:start]))
        pos = start
        if start in sent_of:
            if open_sent_end is not None:
                out.append("</span>")
            end, si = sent_of[start]
            cls = "sent review" if si in review else "sent uncited" if start in uncited else "sent"
            tip = ' title="cites nothing: not checked"' if start in uncited else ""
            out.append(f'<span class="{cls}" data-sentence="{si}"{tip}>')
            open_sent_end = end
        if start in chips:
            end, js = chips[start]
            inner = ", ".join(
                f'<a class="cite {audit[j]["action"]}" href="#a{i}-c{j}" data-citation="a{i}-c{j}" '
                f'data-outcome="{audit[j]["action"]}" data-cited="{audit[j]["cited"]}" tabindex="0">'
                f'{_label(audit[j])}<span class="tip">{_tip(audit[j])}</span></a>' for j in js)
            out.append(f"[{inner}]")
            pos = end
    out.append(escape(e.answer[pos:]))
    if open_sent_end is not None:
        out.append("</span>")
    rows = []
    for j, a in enumerate(audit):
        ev = _evidence(a)
        where = f"[{ev['passage']}] {ev['start']}&ndash;{ev['end']}" if ev else "&mdash;"
        moved = f" &rarr; [{a['new_pointer']}]" if a["action"] == "reattributed" else ""
        score = "" if a.get("score") is None else f"{a['score']:.3f}"
        if a["action"] == "reattributed":
            score += f" &rarr; {a['new_score']:.3f}"
        because = why(a, str(e.report.get("rule", "")))
        kind = "passes" if a["action"] in ("verified", "reattributed") else "review"  # the filter's row class
        rows.append(
            f'<tr id="a{i}-c{j}" data-outcome="{a["action"]}" class="{kind}">'
            f'<td><span class="cite {a["action"]}">'
            f'{LABELS[a["action"]]}</span></td><td>[{_label(a)}]{moved}</td><td>{score}</td>'
            f'<td>{escape(a["claim"])}' + (f'<div class="why" data-why>{escape(because)}</div>' if because else "")
            + f'</td><td>{where}<div class="evidence">'
            f'{escape(snapped(ev)) if ev else escape(a.get("reason", ""))}</div></td></tr>')
    r = e.report
    guarded = escape(e.guarded_answer) if e.guarded_answer is not None else \
        f'<em class="withheld">withheld: {escape(str(r.get("block_reason") or "blocked"))}</em>'
    counts = " &middot; ".join(f"{r.get(k, 0)} {LABELS[k]}" for k in ACTIONS)
    needs = bool(review) or bool(uncited) or bool(r.get("blocked"))
    return (f'<section class="answer {"needs" if needs else "clean"}" id="answer-{i}" '
            f'data-answer-id="{escape(str(e.id))}">'
            f"<h2>Answer {escape(str(e.id))}</h2>"
            f'<div class="answer-counts">{_n(r.get("n_citations", 0), "citation")}: {counts} &middot; '
            f'{_n(r.get("uncited", 0), "uncited sentence")} &middot; review budget '
            f'{100 * r.get("review_budget", 0):.1f}%</div>'
            f'<div class="text">{"".join(out)}</div>'
            f"<table><tr><th>outcome</th><th>citation</th><th>score</th><th>claim</th><th>evidence</th></tr>"
            f'{"".join(rows)}</table>'
            f'<details class="guarded"><summary>guarded text</summary><div class="text">'
            f"{guarded}</div></details></section>")


def render_audit_page(entries: Sequence[AuditEntry], *, verifier: str = "", rule: str = "",
                      guarantee: str = "", title: str = "citebound audit",
                      failed: Sequence[tuple[str, str]] = ()) -> str:
    """The whole page as one HTML string; ``failed``: (answer id, why) of answers that could not be
    guarded, listed on the page so that none is left out unseen."""
    totals = {k: sum(int(e.report.get(k, 0)) for e in entries) for k in (*ACTIONS, "n_citations", "uncited")}
    n = totals["n_citations"]
    budget = pooled_review_budget([e.report for e in entries])
    count_html = (f'<span class="count total">{_n(n, "citation")} in {_n(len(entries), "answer")}</span>' + "".join(
                      f'<span class="count {k}" data-count="{k}">{totals[k]} {LABELS[k]}</span>' for k in ACTIONS)
                  + f'<span class="count uncited" data-count="uncited">{totals["uncited"]} uncited sentences '
                    "(not checked)</span>")
    card = (entries[-1].report.get("guarantee_card") or {}) if entries else {}
    mon = card.get("monitor") or {}
    head = (f"<header><h1>{escape(title)}</h1>"
            f'<div class="rule">verifier {escape(verifier)} &middot; {escape(rule)}</div>'
            f'<div class="counts">{count_html}</div>'
            f'<div class="budget" data-review-budget="{budget:.6f}">Review budget: {100 * budget:.1f}% need a person '
            f"(citations flagged, invalid or unchecked, and sentences that cite nothing)</div>"
            + (f'<div class="guarantee">Guarantee: {escape(guarantee)}</div>' if guarantee else "")
            + (f'<div class="monitor" data-monitor="{escape(str(mon["state"]))}">Monitor: {escape(str(mon["state"]))}'
               f'{" &mdash; " + escape(str(mon["meaning"])) if mon.get("meaning") else ""}</div>' if mon.get("state") else "")
            + _failed_html(failed) + "</header>")
    body = "".join(_answer_html(i, e) for i, e in enumerate(entries))
    shown = sum(1 for e in entries if _needs(e))
    switch = ('<input type="radio" name="show" id="show-review" checked hidden>'
              '<input type="radio" name="show" id="show-all" hidden>'
              f'<div class="filter">Show: <label for="show-review" data-filter="review">needs a person ({shown} of '
              f'{_n(len(entries), "answer")})</label><label for="show-all" data-filter="all">all</label></div>'
              '<div class="legend"><mark class="key-review">highlighted</mark>: a sentence with a citation to review; '
              '<u class="key-uncited">dotted underline</u>: a sentence that cites nothing (not checked)</div>')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"{_style()}</head><body>{head}{switch}<main>{body}</main></body></html>\n")


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}{'s' * (k != 1)}"


def _needs(e: AuditEntry) -> bool:
    """Whether an answer needs a person: a citation to review, a sentence that cites nothing, or blocked."""
    r = e.report
    return bool(r.get("uncited_sentences")) or bool(r.get("blocked")) or any(
        a["action"] in ("flagged", "invalid", "unverified") for a in r.get("audit", []))


def _failed_html(failed: Sequence[tuple[str, str]]) -> str:
    if not failed:
        return ""
    items = "".join(f'<li data-failed="{escape(aid)}"><b>{escape(aid)}</b>: {escape(why)}</li>' for aid, why in failed)
    return (f'<div class="failed"><b>{len(failed)} answers could not be guarded</b> and are not shown below:'
            f"<ul>{items}</ul></div>")
