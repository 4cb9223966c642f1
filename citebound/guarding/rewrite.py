"""How the guard rewrites an answer's markers: flagged ``[N UNVERIFIED]``, ``[N INVALID]``, re-attributed
pointers, and removed sentences."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from citebound.guarding.report import CitationAudit
from citebound.text.citations import Citation
from citebound.text.visible import safe_link


def target(c: Citation) -> Any:
    return c.passage_index if c.passage_index >= 0 else f"invalid:{c.key}"


def by_marker(cs: list[Citation]) -> dict[tuple[int, int], list[Citation]]:
    out: dict[tuple[int, int], list[Citation]] = {}
    for c in cs:
        out.setdefault((c.start, c.end), []).append(c)
    return out


LINK_TAIL = re.compile(r"^\[\[\d+\]\](\(.*\))$")


def rewrite(marker: str, audits: list[CitationAudit], numbers: list[int], mark_reattributed: bool = True,
            fail_open: bool = False) -> str:
    """A marker as the guard leaves it: unchanged when every citation in it is verified and it links
    nowhere unsafe (a ``javascript:``, ``data:`` or other non-http(s) link target is dropped). A
    re-attributed citation reads ``[2 (was 4)]`` (``[2]`` without ``mark_reattributed``)."""
    link = LINK_TAIL.match(marker)
    unsafe = link is not None and not safe_link(link.group(1)[1:-1])
    # --on-error open leaves a verifier's failures as written, never what the guard could not read
    def passes(a: CitationAudit) -> bool:
        return a.action == "verified" or (fail_open and a.action == "unverified" and not a.unreadable)
    if all(passes(a) for a in audits) and not unsafe:
        return marker
    moved = "{p} (was {n})" if mark_reattributed else "{p}"
    def part(a: CitationAudit, n: int) -> str:
        if a.action == "reattributed":
            return moved.format(p=a.new_pointer, n=n)
        if a.action == "flagged" or (a.action == "unverified" and not passes(a)):
            return f"{n} UNVERIFIED"
        return f"{n} INVALID" if a.action == "invalid" else f"{n}"

    parts = [part(a, n) for a, n in zip(audits, numbers)]
    if link and not unsafe and audits[0].action != "reattributed":  # the URL still belongs to this citation
        return f"[[{parts[0]}]]{link.group(1)}"
    return "[" + ", ".join(parts) + "]"


def apply(text: str, edits: Mapping[int, tuple[int, str]], dropped: list[tuple[int, int]]) -> str:
    """Replace marker spans (start -> (end, new)) and delete dropped sentence spans."""
    cut = set()
    for lo, hi in dropped:  # a dropped sentence takes the whitespace after it (or before it, at the end)
        while hi < len(text) and text[hi].isspace():
            hi += 1
        if hi == len(text):
            while lo > 0 and text[lo - 1].isspace():
                lo -= 1
        cut.update(range(lo, hi))
    out, pos = [], 0
    for start in sorted(edits):
        end, new = edits[start]
        out.append("".join(ch for k, ch in enumerate(text[pos:start], pos) if k not in cut))
        if start not in cut:
            out.append(new)
        pos = end
    out.append("".join(ch for k, ch in enumerate(text[pos:], pos) if k not in cut))
    return "".join(out).rstrip() if dropped else "".join(out)
