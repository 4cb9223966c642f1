"""Run in a venv with the [torch] extra: the embedding verifier's scores on tests/lean_install/pairs.json
on the exact float32 torch path (the reference the lean install's graph is compared with), as JSON."""
import json
import sys
from pathlib import Path

from citebound.scoring.loader import load_scorer

pairs = json.loads((Path(__file__).parent / "pairs.json").read_text())
scorer = load_scorer("embedding", runtime={"runtime": "torch"})
scores, _ = scorer([c for c, _ in pairs], [p for _, p in pairs])
json.dump({"hash": scorer.hash, "scores": [float(s) for s in scores]}, sys.stdout)
