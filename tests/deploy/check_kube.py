"""The Kubernetes manifests (deploy/kubernetes), executed as far as a machine with no cluster allows.

``render``: renders the base's overlays with ``kubectl kustomize``, checks the fields of every rendered object
(probes, resources, non-root, read-only root, the Secret and ConfigMap references, the Service, the PDB and the
HPA selecting the pods), validates the ConfigMap's config.yaml with ``citebound serve --print-config``, and
writes what ``podman kube play`` can play (the podman overlay's Deployment and ConfigMaps). Podman 4.3 panics on a
``secret`` volume (nil pointer dereference in kube play), so there each Secret volume is mounted from the same
files by hostPath; everything else is played as rendered.

``serve``: guards through the played pod (its hostPort) and hits both probes.

    python tests/deploy/check_kube.py render --root . --play kube.yaml --secrets DIR
    python tests/deploy/check_kube.py serve --url http://127.0.0.1:18090 --token-file DIR/admin_token
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def render(root: Path, overlay: str) -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(root / "deploy/kubernetes" / overlay)], check=True,
                         capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def one(docs: list[dict], kind: str, name: str = "citebound") -> dict:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
    return found[0]


def check_guard(docs: list[dict], root: Path) -> None:
    dep = one(docs, "Deployment")
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in dep["spec"]["selector"]["matchLabels"].items())
    spec = pod["spec"]
    (c,) = spec["containers"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 10001
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/livez"
    mem = lambda q: int(q.removesuffix("Mi"))  # noqa: E731
    # measured: about 216 MB resident per worker; the largest in-bounds request peaks at 485 MB
    assert mem(c["resources"]["requests"]["memory"]) >= 216 and mem(c["resources"]["limits"]["memory"]) >= 485
    vols = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert "emptyDir" in vols[mounts["/tmp"]] and "emptyDir" in vols[mounts["/var/lib/citebound"]]
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    assert c["args"] == ["--config", "/etc/citebound/conf/config.yaml"], c["args"]
    cfg_cm = vols[mounts["/etc/citebound/conf"]]["configMap"]["name"]
    assert cfg_cm in cms and cms[cfg_cm]["metadata"]["name"] != "citebound-config"  # the generator's hashed name
    assert vols[mounts["/etc/citebound/calibrations"]]["configMap"]["name"] in cms
    secrets = {v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
    assert secrets >= {"citebound-admin-token"}, secrets
    config = yaml.safe_load(cms[cfg_cm]["data"]["config.yaml"])
    for key in ("admin_token_file", "state_password_file"):
        if key in config:  # each secret the config reads is a file on a Secret volume
            path = config[key]
            assert any(path.startswith(mp + "/") and "secret" in vols[name] for mp, name in mounts.items()), path
    # the config file is valid for this citebound: --print-config reads and checks it
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(cms[cfg_cm]["data"]["config.yaml"])
    cfg = {k: v for k, v in config.items() if not k.endswith("_file") and k != "calibrations"}
    with open(fh.name, "w") as out:
        yaml.safe_dump(cfg, out)
    r = subprocess.run([sys.executable, "-m", "citebound", "serve", "--config", fh.name, "--print-config"],
                       capture_output=True, text=True)
    os.unlink(fh.name)
    assert r.returncode == 0, r.stderr
    svc = one(docs, "Service")
    assert svc["spec"]["selector"].items() <= labels.items() and svc["spec"]["ports"][0]["targetPort"] == "http"
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items() and pdb["spec"]["minAvailable"] >= 1
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"] and hpa["spec"]["minReplicas"] >= 2


def check_redis(docs: list[dict]) -> None:
    sts = one(docs, "StatefulSet", "citebound-redis")
    svc = one(docs, "Service", "citebound-redis")
    pod = sts["spec"]["template"]
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (c,) = pod["spec"]["containers"]
    assert c["image"] == "localhost/citebound-infra:0.4.0" and c["command"][0] == "redis-with-secret"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert any(v.get("secret", {}).get("secretName") == "citebound-redis" for v in pod["spec"]["volumes"])
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    sm = one(docs, "ServiceMonitor")
    assert sm["spec"]["endpoints"][0]["path"] == "/metrics"
    dep = one(docs, "Deployment")
    cms = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    cfg = next(yaml.safe_load(d["data"]["config.yaml"]) for d in cms.values() if "config.yaml" in d["data"])
    assert cfg["state"] == f"redis://{svc['metadata']['name']}:6379/0", cfg["state"]
    assert dep["spec"]["replicas"] >= 2


def play_file(docs: list[dict], secrets: Path, out: Path) -> None:
    """The Deployment and its ConfigMaps, each Secret volume mounted from a host folder with the same file."""
    dep = one(docs, "Deployment")
    host = out.parent / "kube-secrets"
    shutil.rmtree(host, ignore_errors=True)
    for v in dep["spec"]["template"]["spec"]["volumes"]:
        if "secret" in v:
            d = host / v["name"]
            d.mkdir(parents=True)
            key = {"citebound-admin-token": "admin_token", "citebound-redis": "redis_password"}[v["secret"]["secretName"]]
            shutil.copy(secrets / key, d / key)
            os.chown(d / key, 10001, 10001)
            os.chmod(d / key, 0o400)
            del v["secret"]
            v["hostPath"] = {"path": str(d), "type": "Directory"}
    keep = [d for d in docs if d["kind"] == "ConfigMap"] + [dep]
    out.write_text(yaml.safe_dump_all(keep, sort_keys=False))


def serve(url: str, token_file: Path) -> None:
    import httpx

    from citebound import examples

    t = time.perf_counter()
    with httpx.Client(base_url=url, timeout=30) as c:
        while True:
            try:
                if c.get("/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.perf_counter() - t < 120, "the played pod is not ready within 120 s"
            time.sleep(0.5)
        assert c.get("/livez").status_code == 200
        import json

        body = json.loads(Path(examples.path("answer.json")).read_text())
        r = c.post("/v1/guard", json=body)
        assert r.status_code == 200, r.text
        assert "[4 INVALID]" in r.json()["guarded_answer"], r.json()["guarded_answer"]
        auth = {"Authorization": "Bearer " + token_file.read_text().strip()}
        assert c.post("/v1/monitor/labels", json={"missed": 0, "unsupported": 2}, headers=auth).status_code == 200
        mon = c.get("/v1/monitor").json()["default"]["monitor"]
        assert mon["labels"]["unsupported"] == 2, mon
    print(f"ok: the played pod: ready in {time.perf_counter() - t:.1f} s; /livez and /readyz 200; the example guarded "
          "([4 INVALID]); a label stored in its SQLite state on the data volume")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render")
    r.add_argument("--root", type=Path, required=True)
    r.add_argument("--play", type=Path, required=True)
    r.add_argument("--secrets", type=Path, required=True)
    s = sub.add_parser("serve")
    s.add_argument("--url", required=True)
    s.add_argument("--token-file", type=Path, required=True)
    a = ap.parse_args()
    if a.cmd == "serve":
        serve(a.url, a.token_file)
        return 0
    with_redis = render(a.root, "overlays/redis")
    check_guard(with_redis, a.root)
    check_redis(with_redis)
    base = render(a.root, "base")
    check_guard(base, a.root)
    podman = render(a.root, "overlays/podman")
    check_guard(podman, a.root)
    play_file(podman, a.secrets, a.play)
    kinds = sorted({d["kind"] for d in with_redis})
    print(f"ok: rendered base, overlays/redis ({', '.join(kinds)}) and overlays/podman; fields checked; "
          f"the config file validated; {a.play} written for podman kube play")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
