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

from citebound.scoring.io import read_records
from citebound.text.citations import MARKER_RE, citation_passages, resolve_marker, uses_string_ids


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


FORMAT_FIELDS = {"nora": "src_answers.Nora", "sections": "response.sections", "ctxs": "output and ctxs"}


def _sections(rec: Any, kind: str) -> Any:
    if not isinstance(rec, dict):
        return None
    if kind == "nora":
        return (rec.get("src_answers") or {}).get("Nora") if isinstance(rec.get("src_answers"), dict) else None
    return (rec.get("response") or {}).get("sections") if isinstance(rec.get("response"), dict) else None


def convert_records(path: str | Path, kind: str) -> Iterator[dict[str, Any]]:
    """Yield guard inputs from a released file of ``kind`` (nora | sections | ctxs).

    A record without the format's fields is a :class:`~citebound.scoring.io.DataError` naming its
    position and the format: a file of another format never becomes empty answers."""
    from citebound.scoring.io import DataError

    if kind not in FORMAT_FIELDS:
        raise DataError(f"unknown format {kind!r}; one of {sorted(FORMAT_FIELDS)}")
    for i, rec in enumerate(read_records(path)):
        if kind == "ctxs":
            if not isinstance(rec, dict) or not isinstance(rec.get("output"), str) or not isinstance(rec.get("ctxs"), list):
                raise DataError(f"{path}: record {i + 1} has no {FORMAT_FIELDS[kind]}: not the {kind!r} format")
            yield {"id": str(rec.get("id", i)), "answer": rec["output"], "passages": rec["ctxs"], "citation_base": 0}
            continue
        sections = _sections(rec, kind)
        if not isinstance(sections, list):
            raise DataError(f"{path}: record {i + 1} has no {FORMAT_FIELDS[kind]}: not the {kind!r} format")
        passages: list[dict[str, str]] = []
        parts, unresolved = [], 0
        for sec in sections:
            text, u = _section_to_numeric(sec.get("text") or "", sec.get("citations") or [], passages)
            parts.append(text)
            unresolved += u
        yield {"id": str(rec.get("idx", i)) if kind == "nora" else str(i), "answer": "\n\n".join(parts),
               "passages": passages, "citation_base": 1, "unresolved_markers": unresolved}
