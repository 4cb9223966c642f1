"""Rule score: one base verifier over one set's pairs."""
import pandas as pd

from citeguard.rulekit import param_json, start
from citeguard.score_tables import score_table
from citeguard.verifiers import build_verifier, cache_for, score_pairs, verifier_windowing

sm = snakemake  # noqa: F821
log = start(sm)
vcfg = {**param_json(sm, "verifier"), "threads": sm.threads}  # the cores this job was given (not in the hash)
win = verifier_windowing(vcfg, param_json(sm, "windowing"))
pairs = pd.read_parquet(sm.input.pairs)
verifier = build_verifier(vcfg, sm.params.cache_dir)
cache = cache_for(vcfg, sm.params.cache_dir)
ps = score_pairs(verifier, pairs["claim"].tolist(), pairs["passage"].tolist(),
                 window_chars=win["window_chars"], stride=win["stride"], claim_cap=win["claim_cap"], cache=cache,
                 max_windows=win.get("max_windows"))
cache.close()
table = score_table(pairs["pair_id"], vcfg["name"], ps, bool(vcfg.get("binary", False)))
table.to_parquet(sm.output[0], index=False)
reasons = table.loc[table.reason != "", "reason"].value_counts().to_dict()
log.info("%s on %s: %d pairs, %d units (%d cached), not normally scored: %s, supported: %.3f",
         vcfg["name"], sm.wildcards.set, len(table), ps.n_units, ps.n_cached, reasons or "none",
         table["verdict"].mean() if len(table) else float("nan"))
