"""Convert released answers into the guard's input format with ``[N]`` markers.

``{"id", "answer", "passages": [{"text", "title"}], "citation_base": 1}`` per
answer; every resolved marker (author-year, bracketed id, markdown link,
per-section numeric) becomes ``[n]`` into one answer-wide passage list.
Unresolved markers are left in the text and counted.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from .citations import MARKER_RE, _author_year_candidates, _expand_numeric, is_blank
from .io import read_records


def _section_to_numeric(text: str, citations: list[Any], passages: list[dict[str, str]]) -> tuple[str, int]:
    table: dict[str, int] = {}
    for c in citations or []:
        if not isinstance(c, dict) or c.get("id") is None:
            continue
        snippets = " ".join(str(s) for s in (c.get("snippets") or []) if not is_blank(s)).strip()
        table.setdefault(str(c["id"]).strip(), len(passages))
        passages.append({"text": snippets, "title": str(c.get("title") or "")})
    string_ids = any(not k.strip("[]").isdigit() for k in table)
    unresolved = 0

    def sub(m) -> str:
        nonlocal unresolved
        body = m.group("link") or m.group("num")
        if body is not None:
            if m.group(0) in table or body in table:
                return f"[{table.get(m.group(0), table.get(body)) + 1}]"
            ids = []
            for n in _expand_numeric(body):
                key = str(n) if str(n) in table else f"[{n}]"
                if key in table:
                    ids.append(str(table[key] + 1))
                else:
                    unresolved += 1
            return f"[{', '.join(ids)}]" if ids else m.group(0)
        if not string_ids:
            return m.group(0)
        key = m.group("bid") if m.group("bid") is not None else m.group("ay")
        ids = []
        for _, cands in _author_year_candidates(m.group(0), key):
            hit = next((k for k in cands if k in table), None)
            if hit is not None:
                ids.append(str(table[hit] + 1))
        if not ids:
            unresolved += 1
            return m.group(0)
        return f"[{', '.join(ids)}]"

    return MARKER_RE.sub(sub, text), unresolved


def convert_records(path: str | Path, kind: str) -> Iterator[dict[str, Any]]:
    """Yield guard inputs from a released file of ``kind`` (nora | sections | ctxs)."""
    for i, rec in enumerate(read_records(path)):
        if kind == "ctxs":
            yield {"id": str(rec.get("id", i)), "answer": rec["output"], "passages": rec["ctxs"], "citation_base": 0}
            continue
        sections = (rec.get("src_answers") or {}).get("Nora") if kind == "nora" else (rec.get("response") or {}).get("sections")
        passages: list[dict[str, str]] = []
        parts, unresolved = [], 0
        for sec in sections or []:
            text, u = _section_to_numeric(sec.get("text") or "", sec.get("citations") or [], passages)
            parts.append(text)
            unresolved += u
        yield {"id": str(rec.get("idx", i)) if kind == "nora" else str(i), "answer": "\n\n".join(parts),
               "passages": passages, "citation_base": 1, "unresolved_markers": unresolved}
