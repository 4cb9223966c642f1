"""Input and output files of the subcommands: JSON, JSONL or stdin in, a file or stdout out."""
from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from citebound.cli.common import CLIError
from citebound.scoring.io import strict_json


def open_in(path: str, max_bytes: int | None = None) -> TextIO:
    """The input as text: a file, or stdin ('-') read up to ``max_bytes`` (the same limit a file has)."""
    if path == "-":
        cap = max_bytes if max_bytes is not None else _default_max_bytes()
        try:
            data = sys.stdin.buffer.read(cap + 1) if hasattr(sys.stdin, "buffer") else sys.stdin.read(cap + 1).encode()
        except (OSError, UnicodeError) as e:
            raise CLIError(f"stdin: cannot read ({e})") from None
        if len(data) > cap:
            raise CLIError(f"stdin has more than {cap} bytes; the limit is {cap} (max_request_bytes)")
        return io.StringIO(_decode(data, "stdin"))
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{path}: is a directory, not an input file")
    if not p.is_file():
        raise CLIError(f"{path}: no such file")
    size = p.stat().st_size
    cap = max_bytes if max_bytes is not None else _default_max_bytes()
    if size > cap:
        raise CLIError(f"{path} has {size} bytes; the limit is {cap} (max_request_bytes)")
    try:
        return io.StringIO(_decode(p.read_bytes(), path))
    except OSError as e:
        raise CLIError(f"{path}: cannot read ({e.strerror or e})") from None


def _default_max_bytes() -> int:
    from citebound.text.limits import Limits

    return Limits().max_request_bytes


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise CLIError(f"{where}:{line}: not UTF-8 text (byte {e.start}: {e.reason}); save the file as UTF-8") from None


def _loads(text: str, where: str) -> Any:
    """json.loads, with every way it can fail on hostile text as one CLIError naming ``where``."""
    try:
        return strict_json(text)
    except json.JSONDecodeError as e:
        raise CLIError(f"{where}: not valid JSON ({e.msg})") from None
    except RecursionError:
        raise CLIError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise CLIError(f"{where}: not usable JSON ({str(e).splitlines()[0]})") from None


def check_out(path: str | None) -> None:
    """A one-line error for an output path in a missing folder or naming a directory."""
    if path in (None, "-"):
        return
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{path}: is a directory; give a file name")
    if not p.parent.is_dir():
        raise CLIError(f"{path}: folder {str(p.parent)!r} does not exist; create it first")


def open_out(path: str | None) -> TextIO:
    """stdout for None/'-'; else the file, with a one-line error when it cannot be written."""
    if path in (None, "-"):
        return sys.stdout
    check_out(path)
    p = Path(path)
    try:
        return open(p, "w", encoding="utf-8")
    except OSError as e:
        raise CLIError(f"{path}: cannot write ({e.strerror or e})") from None


def close_out(fh: TextIO) -> None:
    if fh is not sys.stdout:
        fh.close()


def _jsonl(path: str, lines: Iterator[str]) -> Iterator[tuple[int, Any]]:
    for lineno, line in enumerate(lines, 1):
        if line.strip():
            try:
                yield lineno, _loads(line, f"{path}:{lineno}")
            except CLIError as e:
                yield lineno, e


def iter_json_records(path: str, max_bytes: int | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, record) from a JSON object/array file or a JSONL stream, the input read up to
    ``max_bytes`` (default: the guard's max_request_bytes).

    A bad JSONL line is yielded as a :class:`CLIError` naming file and line.
    """
    fh = open_in(path, max_bytes)
    if path.endswith(".jsonl"):
        yield from _jsonl(path, fh)
        return
    text = fh.read()
    try:
        data = strict_json(text)
    except json.JSONDecodeError as e:
        if sum(1 for ln in text.splitlines() if ln.strip()) > 1:  # JSONL on stdin
            yield from _jsonl(path, iter(text.splitlines()))
            return
        raise CLIError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    except (RecursionError, ValueError):
        data = _loads(text, path)  # raises the one-line error
    if isinstance(data, list):
        raise CLIError(f"{path}: a .json input holds one object, not a list of {len(data)}; for many records write "
                       "JSONL (one object per line, a .jsonl file)")
    yield 1, data


def strict_records(path: str) -> Iterator[tuple[int, Any]]:
    """(line, record) of a JSON or JSONL file, the first bad line a CLIError naming file and line."""
    for n, rec in iter_json_records(path):
        if isinstance(rec, CLIError):
            raise rec
        yield n, rec


def is_label(value: Any) -> bool:
    """A label is the integer 0 or 1 (not true/false, not 0.0): what every reader of labels accepts."""
    return type(value) is int and value in (0, 1)


def is_score(value: Any) -> bool:
    """A score is a finite JSON number (not a string, not true/false)."""
    import math

    return type(value) in (int, float) and math.isfinite(value)


def parse_answer(rec: Any, where: str) -> tuple[str, list[str], int | None]:
    """(answer, passages, citation base or None) of a guard input record; a bad one names ``where``."""
    from citebound.guarding.guard import GuardInputError, normalise_passages

    if not isinstance(rec, dict):
        raise CLIError(f"{where}: expected a JSON object with 'answer' and 'passages'")
    if "answer" not in rec or not isinstance(rec["answer"], str):
        raise CLIError(f"{where}: missing 'answer' (a string)")
    if "passages" not in rec and "ctxs" not in rec:
        raise CLIError(f"{where}: missing 'passages' (or 'ctxs')")
    try:
        passages = normalise_passages(rec.get("passages", rec.get("ctxs")))
    except GuardInputError as e:
        raise CLIError(f"{where}: {e}") from None
    from citebound.text.limits import check_text

    try:
        check_text(rec["answer"], "'answer'")
        for i, p in enumerate(passages):
            check_text(p, f"passage {i}")
    except GuardInputError as e:
        raise CLIError(f"{where}: {e}") from None
    base = rec.get("citation_base")
    if base is not None and (isinstance(base, bool) or base not in (0, 1) or not isinstance(base, int)):
        raise CLIError(f"{where}: 'citation_base' must be 0 or 1, got {base!r}")
    return rec["answer"], passages, base


def labelled_pairs(path: str, with_source: bool) -> list[dict[str, Any]]:
    """{"claim", "passage", "label" 0|1[, "source"]} records of a JSON/JSONL file; a bad one names file and line."""
    out = []
    for lineno, rec in iter_json_records(path):
        if isinstance(rec, CLIError):
            raise rec
        where = f"{path}:{lineno}"
        if not isinstance(rec, dict) or not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
            raise CLIError(f"{where}: expected 'claim' and 'passage' strings")
        if not is_label(rec.get("label")):
            raise CLIError(f"{where}: expected 'label' 0 (unsupported) or 1 (supported), got {rec.get('label')!r}")
        src = rec.get("source") if with_source else None
        if src is not None and not isinstance(src, str):
            raise CLIError(f"{where}: 'source' must be a string when given")
        out.append({"claim": rec["claim"], "passage": rec["passage"], "label": int(rec["label"]), "source": src})
    if not out:
        raise CLIError(f"{path}: no labelled pairs")
    return out
