# citebound: audit and guard citation faithfulness.
#   snakemake --cores all                                   # lite experiment on CPU
#   snakemake --cores all --config experiment=paper          # GPU reproduction
#   snakemake --cores all --config overrides='["verifier_panel=[lexical,embedding]"]'
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/common.smk"


wildcard_constraints:
    set=alt(list(SET_CFG) + PROPOSAL_SETS),
    raw_path=alt(RAW_FILES),
    model=alt([g.name for g in CFG.get("generators", {}).values()]),
    pipeline=alt(CFG.generation.pipelines),


# Light bookkeeping runs on the submitting host under a cluster executor: downloads need the
# internet (compute nodes often have none), the others take seconds.
localrules:
    all,
    download,
    prepare,
    data_summary,
    tiny_model,


include: "workflow/rules/data.smk"
include: "workflow/rules/generate.smk"
include: "workflow/rules/verify.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/rates.smk"
include: "workflow/rules/agreement.smk"
include: "workflow/rules/conformal.smk"
include: "workflow/rules/guarantees.smk"
include: "workflow/rules/reattribution.smk"
include: "workflow/rules/scope.smk"
include: "workflow/rules/failure_kinds.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/examples.smk"


if KIT:

    include: "workflow/rules/kit.smk"


rule all:
    default_target: True
    input:
        all_targets(),
