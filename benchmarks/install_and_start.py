"""Install a citebound wheel alone into a fresh venv and measure what a lab pays for the guard:
the install's wall time, the venv's size, and the cold start of the whole
``citebound guard --input "$(citebound example)" --verifier embedding`` process (median of 5).

    python benchmarks/install_and_start.py dist/citebound-*.whl --venv /tmp/lean --warm
    python benchmarks/install_and_start.py OLD.whl NEW.whl --warm      # before/after, one JSON line each

``--warm`` installs once into a throwaway venv first, so the timed install reads pip's warm cache (no
download); without it the timed install is whatever the cache holds. Prints one JSON line per wheel.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def install(wheel: Path, venv: Path) -> float:
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    t = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], check=True,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def cold_start(venv: Path, runs: int = 5) -> list[float]:
    exe = str(venv / "bin" / "citebound")
    example = subprocess.run([exe, "example"], capture_output=True, text=True, check=True).stdout.strip()
    times, env = [], {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()}
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([exe, "guard", "--input", example, "--verifier", "embedding", "--quiet"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--venv", type=Path, help="where to install (one wheel); default a temporary folder")
    ap.add_argument("--warm", action="store_true", help="install once first, so the timed install reads a warm cache")
    a = ap.parse_args()
    for wheel in a.wheels:
        with tempfile.TemporaryDirectory() as tmp:
            venv = a.venv or Path(tmp) / "venv"
            if a.warm:
                install(wheel, Path(tmp) / "warmup")
                shutil.rmtree(Path(tmp) / "warmup")
            seconds = install(wheel, venv)
            starts = cold_start(venv)
            print(json.dumps({"wheel": wheel.name, "wheel_mb": round(wheel.stat().st_size / 2**20, 1),
                              "install_s": round(seconds, 1), "venv_mb": round(du_mb(venv)),
                              "cold_start_median_s": round(statistics.median(starts), 2),
                              "cold_starts_s": [round(x, 2) for x in starts]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
