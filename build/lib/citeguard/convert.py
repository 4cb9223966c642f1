"""Convert released answers into the guard's input format with ``[N]`` markers.

``{"id", "answer", "passages": [{"text", "title"}], "citation_base": 1}`` per
answer; every resolved marker (author-year, bracketed id, markdown link,
per-section numeric) becomes ``[n]`` into one answer-wide passage list.
Unresolved markers are left in the text and counted.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .citations import MARKER_RE, citation_passages, resolve_marker, uses_string_ids
from .io import read_records


def _section_to_numeric(text: str, citations: list[Any], passages: list[dict[str, str]]) -> tuple[str, int]:
    """Rewrite one section's markers as ``[n]`` into ``passages`` (extended in place)."""
    cited, table = citation_passages(citations)
    offset = len(passages)
    passages.extend(cited)
    string_ids = uses_string_ids(table)
    unresolved = 0

    def sub(m: re.Match) -> str:
        nonlocal unresolved
        targets = resolve_marker(m, len(cited), id_table=table, string_ids=string_ids)
        ids = list(dict.fromkeys(str(idx + offset + 1) for _, _, idx in targets if idx is not None))
        unresolved += sum(idx is None for _, _, idx in targets)
        return f"[{', '.join(ids)}]" if ids else m.group(0)

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
