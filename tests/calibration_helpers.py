"""A calibration file made by ``citebound calibrate --scores`` from records written by hand."""
from __future__ import annotations

import json
from pathlib import Path


def calibrate(folder: Path, records: list[dict], *flags: str, verifier: str = "lexical") -> Path:
    """Write ``records`` as scores.jsonl in ``folder``, calibrate them (``--verifier`` unless ``flags`` give
    ``--verifier-id``) and return the calibration's path; the command must succeed."""
    from citebound.cli.main import main

    src, out = folder / "scores.jsonl", folder / "calibration.json"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    who = [] if "--verifier-id" in flags else ["--verifier", verifier]
    assert main(["calibrate", "--scores", str(src), *who, *flags, "--out", str(out)]) == 0
    return out
