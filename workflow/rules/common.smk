# Helpers shared by all the rule files (config composition, set lists, input
# functions and the final-target list).
import json
import re
from pathlib import Path

from citebound.study.config import compose_config, config_json, source_key, to_plain
from citebound.study.schema import check_analysis_sets, check_cli_keys, check_score_first

ROOT = Path(workflow.basedir)


def _user_overrides():
    check_cli_keys(config)
    ov = config.get("overrides", [])
    if isinstance(ov, str):
        ov = json.loads(ov) if ov.strip().startswith("[") else [ov]
    ov = list(ov)
    if "experiment" in config:
        ov.append(f"experiment={config['experiment']}")
    return ov


CFG = compose_config(_user_overrides(), config_dir=ROOT / "config")
if CFG.standard_analyses:
    check_analysis_sets(to_plain(CFG))
config["experiment_name"] = CFG.experiment_name  # for report captions (the experiment may come via overrides)
RAW = CFG.raw_dir
RES = CFG.results_dir
FIG = CFG.figures_dir
PANEL = list(CFG.verifier_panel)
STACKED = [v for v in CFG.verifiers if CFG.verifiers[v].kind == "fitted"]
BASE_VERIFIERS = [v for v in CFG.verifiers if v not in STACKED]


def _set_configs():
    sets = {}
    for name, d in CFG.get("dataset_cfg", {}).items():
        sets[f"gold/{name}"] = to_plain(d)
    for d in CFG.get("source_cfg", {}).values():
        sets[d.name] = to_plain(d)
    for m in CFG.generation.models:
        for p in CFG.generation.pipelines:
            sets[f"generated/{m}/{p}"] = {
                "name": f"generated/{m}/{p}",
                "kind": "ctxs_answers",
                "citation_base": 1,
                "files": {},
            }
    return sets


def _guard_verifier():
    """The worked examples' verifier: named in analysis.guard_verifier (checked by the schema),
    or the panel's last continuous one."""
    name = CFG.analysis.get("guard_verifier")
    continuous = [v for v in PANEL if not CFG.verifiers[v].get("binary", False)]
    if name is None:
        return continuous[-1] if continuous else None
    return name


GUARD_VERIFIER = _guard_verifier()
# the CPU verifiers whose calibration on the attribution gold ships with the guard (package data)
DEFAULT_CAL_VERIFIERS = [v for v in ("lexical", "embedding") if v in PANEL]
SET_CFG = _set_configs()
SOURCE_SETS = [s for s in SET_CFG if not s.startswith("gold/")]
FROZEN_SETS = [s for s, c in SET_CFG.items() if c["kind"] == "frozen_scores"]
SCORED_SETS = [s for s in SET_CFG if s not in FROZEN_SETS]
# each source's re-attribution proposals (failure_kinds): scored by the score rule like a set
PROPOSAL_SETS = [f"{s}/proposals" for s in SOURCE_SETS]

RAW_FILES = {f["path"]: f for c in SET_CFG.values() for f in c["files"].values()}
TRAIN = CFG.train_verifier
RAW_FILES.update({f.path: to_plain(f) for f in TRAIN.files.values()})
RAW_FILES.update({f.path: to_plain(f) for f in TRAIN.dedupe_files.values()})
KIT = CFG.get("kit")
if KIT:
    RAW_FILES.update({f.path: to_plain(f) for f in KIT.files.values()})


def alt(names):
    """A wildcard constraint matching exactly the given names."""
    return "|".join(re.escape(n) for n in names) if names else "$^"


def set_json(w):
    return config_json(SET_CFG[w.set])


def raw_inputs(w):
    """Raw files of a set (downloaded or mirrored), or its generation output."""
    if w.set.startswith("generated/"):
        _, m, p = w.set.split("/")
        return {"answers": f"{RES}/generations/{m}/{p}.jsonl"}
    return {k: f"{RAW}/{f['path']}" for k, f in SET_CFG[w.set]["files"].items()}


def verifier_json(w):
    return config_json(CFG.verifiers[w.verifier])


def trained_model(name):
    """A trained verifier's head when this experiment's train_verifier job makes it; nothing for a
    model given by its own path."""
    v = CFG.verifiers[name]
    own = f"{RES}/models/trained"
    return [f"{own}/head.json"] if v.kind == "trained" and str(v.model).rstrip("/") == own else []


def verifier_env(name):
    """Conda env of a verifier's score jobs: the CUDA one for GPU verifiers, else the CPU one."""
    gpu = int(CFG.verifiers[name].get("resources", {}).get("gpu", 0))
    return str(ROOT / "envs" / ("vllm.yaml" if gpu else "cpu.yaml"))


def verifier_resources(name, key, default):
    return CFG.verifiers[name].get("resources", {}).get(key, default)


def slurm_partition(gpus):
    """The Slurm partition a job with ``gpus`` GPUs asks for ('' = the cluster's default)."""
    parts = CFG.get("slurm_partitions") or {}
    return str(parts.get("gpu" if int(gpus) else "cpu") or "")


SCORE_FIRST = list(CFG.score_first)
check_score_first(SCORE_FIRST, SET_CFG)


def score_priority(set_name):
    """Scheduling order of a set's prepare and score jobs. Snakemake's scheduler starts the
    highest priority first and breaks ties arbitrarily, so a long job could be left for the end while
    the other cores idle. Order: a stacked verifier's training set (its fit gates every stacked score
    job), then the experiment's ``score_first`` sets in their order (lite lists its longest jobs),
    then the other gold sets, then the rest. Gold sets also come before the released sets that share
    units with them (released/expert's are a subset of attribution_gold's), which then read those
    units from the score cache instead of scoring them again."""
    train = {CFG.verifiers[v].train_set for v in STACKED}
    n = len(SCORE_FIRST)
    if set_name in train:
        return n + 2
    if set_name in SCORE_FIRST:
        return n + 1 - SCORE_FIRST.index(set_name)
    return 1 if set_name.startswith("gold/") else 0


# the stacked fit and stacked score jobs: above every score job (seconds each; the fit gates the rest)
STACKED_PRIORITY = len(SCORE_FIRST) + 3


def scores(sets, verifiers=None):
    verifiers = PANEL if verifiers is None else verifiers
    return [f"{RES}/scores/{s}/{v}.parquet" for s in sets for v in verifiers]


def pairs(sets):
    return [f"{RES}/data/{s}/pairs.parquet" for s in sets]


def slice_json(*keys):
    node = CFG
    for k in keys:
        node = node[k]
    return config_json(node)


def analysis_targets():
    return [
        f"{RES}/tables/validation.csv",
        f"{RES}/tables/unsupported_rates.csv",
        f"{RES}/tables/agreement.csv",
        f"{RES}/tables/conformal_coverage.csv",
        f"{RES}/tables/guarantees_ltt.csv",
        f"{RES}/tables/reattribution.csv",
        f"{RES}/tables/scope.csv",
        f"{RES}/tables/worked_examples.csv",
        f"{RES}/tables/failure_kinds.csv",
        f"{RES}/tables/citation_pr.csv",
    ]


def kit_targets():
    return [f"{RES}/tables/{t}.csv" for t in ("kit_cells", "kit_paired", "kit_conformal", "kit_vs_authors")] + [
        f"{FIG}/kit_coverage.png"
    ]


def all_targets():
    targets = [f"{RES}/tables/data_summary.csv"] + scores(SCORED_SETS)
    targets += [f"{RES}/tables/train_verifier.csv", f"{RES}/tables/verifier_designs.csv"] if TRAIN.build else []
    return targets + (analysis_targets() if CFG.standard_analyses else []) + (kit_targets() if KIT else [])


# ---- analysis inputs --------------------------------------------------------------
A = CFG.analysis
VAL_SET, CAL_SET, HARD_SET, SCOPE_SET, FROZEN_SET = (
    A.validation_set,
    A.calibration_set,
    A.hard_negative_set,
    A.scope_set,
    A.frozen_scores_set,
)
VAL_SETS = [VAL_SET] + ([A.validation_heldout_set] if A.get("validation_heldout_set") else [])
# validation reads the calibration gold too (its evaluation split: the part the stacked verifier never fits)
VALIDATE_SETS = VAL_SETS + ([CAL_SET] if CAL_SET and CAL_SET not in VAL_SETS else [])


def scored_inputs(name, sets, verifiers=None):
    """Named input lists: <name>_pairs and <name>_scores (per set, panel order)."""
    return {f"{name}_pairs": pairs(sets), f"{name}_scores": scores(sets, verifiers)}


def settings(**keys):
    """A rule's one config param: exactly the keys it reads, as sorted JSON, so that changing
    a key reruns only the rules that read it."""
    return {"settings": json.dumps({k: to_plain(v) for k, v in keys.items()}, sort_keys=True)}


def train_settings(design=None):
    """The train_verifier keys a training job reads: the head's (no network keys), or with one
    network design's settings (the shared ones and that design's own overrides, not the other's)."""
    out = {k: to_plain(v) for k, v in TRAIN.items() if k not in ("files", "build", "dedupe_files", "networks")}
    if design is not None:
        designs = set(TRAIN.networks.designs)
        out["networks"] = {k: to_plain(v) for k, v in TRAIN.networks.items() if k not in designs or k == design}
    return out


def network_settings(design):
    """One network job's settings param (changing one design's keys reruns only that design)."""
    return settings(
        train_verifier=train_settings(design),
        dedupe_texts=list(TRAIN.dedupe_files),
        files=TRAIN.files,
        windowing=CFG.windowing,
        n_bootstrap=A.n_bootstrap,
        validation_set=VAL_SET,
        calibration_set=CAL_SET,
        dedupe_sets=[s for s in SCORED_SETS if s.startswith("gold/")],
        calibration_licence=calibration_licence(),
    )["settings"]


def calibration_licence():
    """The calibration (attribution) gold's licence(s): its fit split is a training source."""
    return sorted({str(f["licence"]) for f in SET_CFG[CAL_SET]["files"].values()}) if CAL_SET in SET_CFG else []


def verifier_bundle(name):
    """JSON of one verifier's config plus those of its feature verifiers (stacked)."""
    names = [name] + list(CFG.verifiers[name].get("features", []) or [])
    return json.dumps({n: to_plain(CFG.verifiers[n]) for n in names}, sort_keys=True)


def generator_cfg(name):
    return CFG.generators[source_key(name)]


def generation_inputs(w):
    if CFG.generation.task_set == "kit/bioasq":
        inputs = {"tasks": f"{RES}/data/kit/bioasq_slice.json"}
    else:
        inputs = {"tasks": f"{RAW}/{SET_CFG[CFG.generation.task_set]['files']['answers']['path']}"}
    if generator_cfg(w.model).get("build_tiny"):
        inputs["model"] = generator_cfg(w.model).model
    return inputs


def stacked_features(w, set_name):
    """Score files of a stacked verifier's feature verifiers on one set."""
    return scores([set_name], list(CFG.verifiers[w.verifier].features))


def kit_raw(role):
    return f"{RAW}/{KIT.files[role].path}"


def kit_slice_inputs(w):
    """The kit manifest (raw) or the local test dataset's files."""
    if KIT.local:
        d = KIT.local.dir
        return {"manifest": f"{d}/manifest.json", "qa": f"{d}/qa.parquet", "corpus": f"{d}/corpus.parquet"}
    return {"manifest": kit_raw("manifest")}


def kit_cells():
    return [(m, p) for m in CFG.generation.models for p in CFG.generation.pipelines]
