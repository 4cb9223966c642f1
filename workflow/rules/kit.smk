# Kit stage: the paper authors' reproduction kit as an experiment (--config experiment=kit):
# the BioASQ slice through HF datasets, per-cell kit metrics, and the comparison with the
# authors' expected summary.
KIT_LOCAL = KIT.local.dir if KIT.local else "resources/kit_test"


rule kit_test_data:
    """A small local dataset of the hub's schema (stand-in passages) for CPU runs offline."""
    input:
        qa_csv=kit_raw("qa_csv"),
        manifest=kit_raw("manifest"),
    output:
        qa=f"{KIT_LOCAL}/qa.parquet",
        corpus=f"{KIT_LOCAL}/corpus.parquet",
        manifest=f"{KIT_LOCAL}/manifest.json",
    log:
        f"{RES}/logs/kit/test_data.log",
    benchmark:
        f"{RES}/benchmarks/kit/test_data.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(n=KIT.local.n if KIT.local else 0),
    script:
        "../../scripts/kit_test_data.py"


rule kit_slice:
    """The kit's BioASQ slice, rebuilt through HF datasets and checked against the manifest (md5)."""
    input:
        unpack(kit_slice_inputs),
    output:
        f"{RES}/data/kit/bioasq_slice.json",
    log:
        f"{RES}/logs/kit/slice.log",
    benchmark:
        f"{RES}/benchmarks/kit/slice.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(qa=KIT.qa, corpus=KIT.corpus, qa_csv=KIT.files.qa_csv.path, local=bool(KIT.local)),
        cache_dir=f"{CFG.cache_dir}/datasets",
    script:
        "../../scripts/kit_slice.py"


rule kit_cell:
    """Per-item kit metrics of one model x cell: citation P/R/F1, unsupported sentences, coverage."""
    input:
        generations=f"{RES}/generations/{{model}}/{{pipeline}}.jsonl",
        slice=f"{RES}/data/kit/bioasq_slice.json",
        pairs=f"{RES}/data/generated/{{model}}/{{pipeline}}/pairs.parquet",
        scores=f"{RES}/scores/generated/{{model}}/{{pipeline}}/{KIT.guard_verifier}.parquet",
    output:
        f"{RES}/kit_items/{{model}}/{{pipeline}}.csv",
    log:
        f"{RES}/logs/kit/cell/{{model}}/{{pipeline}}.log",
    benchmark:
        f"{RES}/benchmarks/kit/cell/{{model}}/{{pipeline}}.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(cue_pattern=KIT.cue_pattern, rouge_caps=KIT.rouge_caps, seed=KIT.seed),
    script:
        "../../scripts/kit_cell.py"


rule kit_tables:
    """Cell summaries with item-bootstrap CIs, lit - bare, the cross-domain conformal check and
    the comparison with the authors' expected summary."""
    input:
        cell_items=[f"{RES}/kit_items/{m}/{p}.csv" for m, p in kit_cells()],
        scores=[f"{RES}/scores/generated/{m}/{p}/{KIT.guard_verifier}.parquet" for m, p in kit_cells()],
        expected=kit_raw("expected"),
        qasa=kit_raw("qasa_scores"),
    output:
        cells=report(f"{RES}/tables/kit_cells.csv", caption="../report/kit.rst", category="Kit"),
        paired=f"{RES}/tables/kit_paired.csv",
        conformal=f"{RES}/tables/kit_conformal.csv",
        authors=report(f"{RES}/tables/kit_vs_authors.csv", caption="../report/kit_vs_authors.rst", category="Kit"),
        png=report(f"{FIG}/kit_coverage.png", caption="../report/kit.rst", category="Kit"),
        pdf=f"{FIG}/kit_coverage.pdf",
    log:
        f"{RES}/logs/kit/tables.log",
    benchmark:
        f"{RES}/benchmarks/kit/tables.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            cells=kit_cells(),
            authors_model=KIT.authors_model,
            alphas=KIT.alphas,
            bands=KIT.bands,
            seed=KIT.seed,
            n_bootstrap=A.n_bootstrap,
        ),
    script:
        "../../scripts/kit_tables.py"
