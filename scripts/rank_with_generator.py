"""Rule rank_with_generator: score every (sentence, candidate passage) with a generation model."""
import pandas as pd
from tqdm.auto import tqdm

from citebound.scoring.llm_backends import build_backend
from citebound.study.workflow_helpers import eval_split, param_json, start

if __name__ == "__main__":  # vLLM may spawn worker processes
    sm = snakemake  # noqa: F821
    log = start(sm)
    gen = param_json(sm, "generator")
    pairs = pd.read_parquet(sm.input.pairs)
    pairs = eval_split(pairs)
    backend = build_backend(gen)
    if not hasattr(backend, "yes_probability"):
        raise ValueError(f"generator {gen['name']}: backend {gen.get('backend')!r} gives no token probabilities")
    msgs = [[{"role": "user", "content": sm.params.prompt.format(passage=p, claim=c)}]
            for c, p in zip(pairs["claim"], pairs["passage"])]
    bs = int(gen.get("batch_size", 8))
    # batches of similar length: short prompts do not pay for the longest one's padding
    order = sorted(range(len(msgs)), key=lambda i: len(msgs[i][0]["content"]))
    scores = [0.0] * len(msgs)
    for i in tqdm(range(0, len(order), bs), desc=f"rank[{gen['name']}]", unit="batch"):
        idx = order[i:i + bs]
        for j, p in zip(idx, backend.yes_probability([msgs[j] for j in idx])):
            scores[j] = p
    pd.DataFrame({"pair_id": pairs["pair_id"].to_numpy(), "score": scores}).to_parquet(sm.output[0], index=False)
    log.info("%s: scored %d (sentence, passage) pairs", gen["name"], len(scores))
