"""Fetching raw files (upstream or local mirror) and reading them robustly."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MIRROR_ENV = "CITEBOUND_DATA_MIRROR"


def data_mirror() -> str | None:
    """The local data mirror ($CITEBOUND_DATA_MIRROR; the old $CITEGUARD_DATA_MIRROR is read with a warning)."""
    from citebound._env import getenv

    return getenv("DATA_MIRROR") or None


class DataError(ValueError):
    """A problem with an input file; the message names the file (and line)."""


@dataclass(frozen=True)
class FileSpec:
    """One raw file: where it lives upstream, where in the mirror, its checksum."""

    path: str  # relative path, identical in the mirror and under resources/raw
    url: str
    sha256: str
    licence: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileSpec:
        return cls(path=d["path"], url=d["url"], sha256=d.get("sha256") or "", licence=d.get("licence", ""))


def sha256sum(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def fetch_file(spec: FileSpec, dest: str | Path, mirror: str | None = None) -> str:
    """Copy ``spec`` from ``mirror`` (if given) or download it from ``spec.url``,
    then verify its sha256. Returns where it came from.

    Raises :class:`DataError` naming the file when it is missing from the
    mirror or its checksum does not match.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkstemp(dir=dest.parent, prefix=".part-")[1])
    try:
        if mirror:
            src = Path(mirror) / spec.path
            if not src.is_file():
                raise DataError(f"{src}: not found in mirror {mirror} (set by {MIRROR_ENV})")
            shutil.copyfile(src, tmp)
            origin = str(src)
        else:
            try:
                with urllib.request.urlopen(spec.url, timeout=120) as r, open(tmp, "wb") as out:
                    shutil.copyfileobj(r, out)
            except OSError as e:  # URLError is an OSError
                raise DataError(
                    f"{spec.url}: download failed ({e}); offline? set {MIRROR_ENV} to a local mirror"
                ) from e
            origin = spec.url
        got = sha256sum(tmp)
        if not spec.sha256:
            raise DataError(
                f"{origin}: no sha256 is recorded for {spec.path}; the fetched file has sha256 {got}. "
                "Check the file, then record that value as its 'sha256' in the dataset config"
            )
        if got != spec.sha256:
            raise DataError(
                f"{origin}: sha256 mismatch (expected {spec.sha256}, got {got}); "
                "the file is corrupted, truncated or a different version"
            )
        os.replace(tmp, dest)
        return origin
    finally:
        if tmp.exists():
            tmp.unlink()


def _no_constant(name: str) -> Any:
    raise ValueError(f"a non-finite number ({name}); JSON has none, write a finite number or null")


def _finite(text: str) -> float:
    import math

    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"a number out of range ({text[:40]}); write a finite number")
    return x


def strict_json(text: str) -> Any:
    """json.loads refusing NaN, Infinity and numbers that overflow to infinity (ValueError), as the service does."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def read_records(path: str | Path, strict: bool = False) -> list[Any]:
    """Read a ``.json`` list/dict or a ``.jsonl`` file into a list of records.

    Handles the known defect of a ``.jsonl`` file that is really one JSON
    array. Malformed content raises :class:`DataError` with file and line.
    ``strict``: NaN, Infinity and numbers that overflow are malformed too (what the guard's readers of a
    user's file do; the study reads upstream files as they are).
    """
    loads = strict_json if strict else json.loads
    path = Path(path)
    data_bytes = path.read_bytes()
    try:
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data_bytes[:e.start].count(b"\n") + 1
        raise DataError(f"{path}:{line}: not UTF-8 text (byte {e.start}: {e.reason}); save the file as UTF-8") from None
    stripped = text.lstrip()
    if path.suffix == ".jsonl" and not stripped.startswith("["):
        return list(_iter_jsonl(path, text, loads))
    try:
        data = loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg}); truncated or corrupted file?") from e
    except RecursionError:
        raise DataError(f"{path}: JSON nested too deeply") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise DataError(f"{path}: not usable JSON ({str(e).splitlines()[0]})") from None
    return data if isinstance(data, list) else [data]


def _iter_jsonl(path: Path, text: str, loads: Any = json.loads) -> Iterator[Any]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{lineno}: invalid JSON line ({e.msg})") from e
        except RecursionError:
            raise DataError(f"{path}:{lineno}: JSON nested too deeply") from None
        except ValueError as e:
            raise DataError(f"{path}:{lineno}: not usable JSON ({str(e).splitlines()[0]})") from None


def read_json_object(path: str | Path) -> dict[str, Any]:
    recs = read_records(path)
    if len(recs) != 1 or not isinstance(recs[0], dict):
        raise DataError(f"{path}: expected one JSON object")
    return recs[0]
