import os
import sys
import threading
from pathlib import Path

import pytest
import tqdm

# tqdm's default write lock is a multiprocessing semaphore shared across fork(): a forked test
# runner (mutmut) killed while holding it deadlocks every later one. Tests need only a thread lock,
# and no monitor thread.
tqdm.tqdm.set_lock(threading.RLock())
tqdm.tqdm.monitor_interval = 0

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
MIRROR = os.environ.get("CITEGUARD_DATA_MIRROR") or str(ROOT.parent / "shared" / "data")

TEXTS = ["mitochondria produce atp in cells", "lipid nanoparticles adsorb serum proteins",
         "the gene increases cancer risk", "protein binds the receptor"]


@pytest.fixture(scope="session")
def mirror() -> Path:
    p = Path(MIRROR)
    if not (p / "SOURCES.md").is_file():
        pytest.fail(f"data mirror not found at {p}: set CITEGUARD_DATA_MIRROR")
    return p


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    from citeguard.tiny import build_tiny_t5
    return build_tiny_t5(tmp_path_factory.mktemp("t5") / "model", TEXTS)


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory) -> Path:
    from citeguard.tiny import build_tiny_deberta_nli
    return build_tiny_deberta_nli(tmp_path_factory.mktemp("nli") / "model", TEXTS)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    from citeguard.tiny import build_tiny_llama
    return build_tiny_llama(tmp_path_factory.mktemp("llama") / "model", TEXTS)


def verifier_cfg(name: str, **over):
    import yaml
    cfg = yaml.safe_load((ROOT / "config" / "verifier" / f"{name}.yaml").read_text())
    cfg.update(over)
    return cfg
