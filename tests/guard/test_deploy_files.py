"""The deployment files agree with each other and with the package, without Podman (tests/deploy/run.sh runs them
for real in CI): the Kubernetes calibration is the shipped one, every config file's keys are serve's, the
load balancer lists exactly the compose file's replicas, and the image installs the extras the docs name."""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def test_the_kubernetes_calibration_is_the_shipped_one():
    shipped = (ROOT / "citebound" / "calibrations" / "embedding.json").read_bytes()
    assert (DEPLOY / "kubernetes" / "base" / "calibrations" / "default.json").read_bytes() == shipped


@pytest.mark.parametrize("path", ["config.yaml", "kubernetes/base/config.yaml", "kubernetes/overlays/podman/config.yaml"])
def test_every_config_file_is_valid_for_serve(path, tmp_path, capsys):
    from citebound.cli.main import main

    cfg = yaml.safe_load((DEPLOY / path).read_text())
    # the secret and folder paths exist only inside the pod; the keys and every other value are checked here
    local = {k: v for k, v in cfg.items() if not k.endswith("_file") and k != "calibrations"}
    if str(local.get("state", "")).startswith("/var/lib/citebound"):
        local["state"] = str(tmp_path / "monitor.sqlite")
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(local))
    assert main(["serve", "--config", str(f), "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert all(printed[k] == v for k, v in local.items() if k != "state")


def test_the_load_balancer_lists_exactly_the_compose_replicas():
    compose = yaml.safe_load((DEPLOY / "compose" / "compose.yaml").read_text())
    guards = sorted(n for n, s in compose["services"].items() if "citebound:" in str(s.get("image", "")))
    assert guards == ["guard-1", "guard-2"]
    cfg = (DEPLOY / "compose" / "haproxy.cfg").read_text()
    for backend in ("guards", "monitor"):
        block = cfg.split(f"backend {backend}\n", 1)[1].split("\n\n", 1)[0]
        assert sorted(re.findall(r"^\s+server (\S+) (\S+):8000$", block, re.M)) == [(g, g) for g in guards]
    for g in guards:
        s = compose["services"][g]
        assert s["read_only"] is True and s["user"] == "10001:10001" and set(s["secrets"]) == {"redis_password", "admin_token"}
        assert s["environment"]["CITEBOUND_STATE"] == "redis://redis:6379/0"


def test_the_image_installs_the_extras_the_docs_name_and_no_torch():
    cf = (DEPLOY / "Containerfile").read_text()
    assert '[serve,mcp,redis,otlp]"' in cf and "USER 10001:10001" in cf and "HEALTHCHECK" in cf
    installs = [ln for ln in cf.splitlines() if "pip install" in ln]
    assert len(installs) == 3 and not any("torch" in ln or "[study" in ln for ln in installs)
    assert "find_spec('torch')" in cf  # and the build fails if something brought torch in
    assert "the `[serve]`, `[mcp]`, `[redis]` and `[otlp]` extras" in (ROOT / "docs" / "DEPLOY.md").read_text()
