"""The deployment's files checked for what they must do (#56 round 68), each fact read from the files themselves
and, for the health paths, from a running service: the selectors select the guard's pods, the autoscaler and
the Service reach them, every mounted file is where the configuration reads it, a pod outlives its drain, the
guard runs unprivileged on a read-only root, nothing is published beyond loopback, and each health check asks
the question its role needs (liveness never waits on the store; readiness does; the load balancer's verdict
check does not, its label check does). tests/deploy/run.sh runs the same files for real with Podman (CI)."""
from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "kubernetes" / "base"


def manifests(folder: Path = BASE) -> dict[str, dict]:
    """{kind: manifest} of the folder's Kubernetes files (one of each kind there)."""
    out = {}
    for f in sorted(folder.glob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text()):
            if isinstance(d, dict) and "kind" in d and d["kind"] != "Kustomization":
                assert d["kind"] not in out, f"two {d['kind']} manifests"
                out[d["kind"]] = d
    return out


def pod() -> dict:
    return manifests()["Deployment"]["spec"]["template"]


def guard_container() -> dict:
    (c,) = pod()["spec"]["containers"]
    return c


def k8s_config() -> dict:
    return yaml.safe_load((BASE / "config.yaml").read_text())


def haproxy() -> dict[str, list[list[str]]]:
    """HAProxy's sections ('defaults', 'frontend guard', 'backend guards' ...), each a list of its lines' words."""
    out: dict[str, list[list[str]]] = {}
    section = None
    for line in (DEPLOY / "compose" / "haproxy.cfg").read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if not line[0].isspace():
            section = " ".join(words)
            out[section] = []
        else:
            out[section].append(words)
    return out


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose" / "compose.yaml").read_text())


def guard_services() -> dict[str, dict]:
    return {n: s for n, s in compose()["services"].items() if "citebound:" in str(s.get("image", ""))}


def test_every_selector_selects_the_guard_pods():
    m = manifests()
    labels = pod()["metadata"]["labels"]
    for kind, selector in (("Deployment", m["Deployment"]["spec"]["selector"]["matchLabels"]),
                           ("Service", m["Service"]["spec"]["selector"]),
                           ("PodDisruptionBudget", m["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"])):
        assert selector and all(labels.get(k) == v for k, v in selector.items()), (kind, selector, labels)


def test_the_autoscaler_and_the_disruption_budget_fit_the_deployment():
    m = manifests()
    assert m["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "Deployment", "name": m["Deployment"]["metadata"]["name"]}
    low = m["HorizontalPodAutoscaler"]["spec"]["minReplicas"]
    # a node drain can always evict one pod, and one pod is always left serving
    assert 1 <= m["PodDisruptionBudget"]["spec"]["minAvailable"] < low <= m["Deployment"]["spec"]["replicas"]


def test_the_kustomization_applies_every_manifest_of_the_base():
    kz = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    files = {f.name for f in BASE.glob("*.yaml")
             if any(isinstance(d, dict) and "kind" in d for d in yaml.safe_load_all(f.read_text()))} - {"kustomization.yaml"}
    assert sorted(kz["resources"]) == sorted(files) and len(files) == 4


def test_every_door_leads_to_the_port_serve_listens_on():
    port = k8s_config()["port"]
    assert port == yaml.safe_load((DEPLOY / "config.yaml").read_text())["port"] == 8000
    c = guard_container()
    by_name = {p["name"]: p["containerPort"] for p in c["ports"]}
    target = manifests()["Service"]["spec"]["ports"][0]["targetPort"]
    assert by_name.get(target, target) == port
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        p = c[probe]["httpGet"]["port"]
        assert by_name.get(p, p) == port, probe
    assert re.search(r"^EXPOSE (\d+)$", (DEPLOY / "Containerfile").read_text(), re.M).group(1) == str(port)
    for name, s in guard_services().items():
        assert [p.rsplit(":", 1)[1] for p in s["ports"]] == [str(port)], name
    for backend in ("backend guards", "backend monitor"):
        servers = [w for w in haproxy()[backend] if w[0] == "server"]
        assert servers and all(w[2].endswith(f":{port}") for w in servers), backend


def secret_keys() -> dict[str, str]:
    """{secret name: the file key it holds}, from the kubectl commands the kustomization tells an operator to run."""
    text = (BASE / "kustomization.yaml").read_text()
    return dict(re.findall(r"kubectl create secret generic (\S+) --from-file=(\w+)=", text))


def test_every_mounted_file_is_where_the_configuration_reads_it():
    spec, c, cfg = pod()["spec"], guard_container(), k8s_config()
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in c["volumeMounts"]}
    keys = secret_keys()
    assert set(keys) == {"citebound-admin-token", "citebound-redis"}
    files = {k: v for k, v in cfg.items() if k.endswith("_file")}
    assert set(files) == {"admin_token_file", "state_password_file"}
    for key, path in files.items():
        folder, name = path.rsplit("/", 1)
        secret = mounts[folder]["secret"]["secretName"]  # a KeyError: the file's folder is not a mount
        assert keys[secret] == name, (key, path, secret)
    assert mounts[cfg["calibrations"]]["configMap"]["name"] == "citebound-calibrations"
    conf = c["args"][c["args"].index("--config") + 1]
    folder, name = conf.rsplit("/", 1)
    assert mounts[folder]["configMap"]["name"] == "citebound-config"
    kz = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    generated = {g["name"]: [Path(f).name for f in g["files"]] for g in kz["configMapGenerator"]}
    assert name in generated["citebound-config"] and "config.yaml" == name
    # Redis (components/redis) reads its password from the same Secret, under the same key
    redis = next(d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "components" / "redis" / "redis.yaml").read_text())
                 if d["kind"] == "StatefulSet")["spec"]["template"]["spec"]
    rmounts = {m["mountPath"]: {v["name"]: v for v in redis["volumes"]}.get(m["name"])
               for m in redis["containers"][0]["volumeMounts"]}
    folder, name = redis["containers"][0]["command"][1].rsplit("/", 1)
    assert rmounts[folder]["secret"]["secretName"] == "citebound-redis" and keys["citebound-redis"] == name
    assert cfg["state"].startswith("redis://citebound-redis:")  # the component's Service


def test_a_pod_outlives_its_drain_and_its_longest_request():
    from citebound.serving.state import ServeConfig

    cfg = k8s_config()
    grace = pod()["spec"]["terminationGracePeriodSeconds"]
    timeout = cfg.get("request_timeout", ServeConfig.request_timeout_s)
    assert grace >= cfg["drain_grace"] + timeout, (grace, cfg["drain_grace"], timeout)


def test_the_guard_runs_unprivileged_on_a_read_only_root():
    spec, c = pod()["spec"], guard_container()
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and spec["automountServiceAccountToken"] is False
    volumes = {v["name"]: v for v in spec["volumes"]}
    writable = {m["mountPath"] for m in c["volumeMounts"] if "emptyDir" in volumes[m["name"]] and not m.get("readOnly")}
    assert writable == {"/tmp", "/var/lib/citebound"}  # the only places the image writes (its Containerfile says)
    cf = (DEPLOY / "Containerfile").read_text()
    users = re.findall(r"^USER (\S+)$", cf, re.M)
    final = cf.rsplit("\nFROM ", 1)[1]
    assert users and users[-1] in final and users[-1].split(":")[0] not in ("0", "root")
    for name, s in guard_services().items():
        assert s["read_only"] is True and str(s["user"]).split(":")[0] not in ("0", "root"), name


def test_nothing_in_compose_is_published_beyond_loopback():
    published = [(n, p) for n, s in compose()["services"].items() for p in s.get("ports", [])]
    assert len(published) == 3
    assert all(str(p).startswith("127.0.0.1:") for _, p in published), published


def test_the_compose_replicas_find_redis_and_their_secrets():
    services = compose()["services"]
    redis = [n for n, s in services.items() if "redis" in " ".join(map(str, s.get("command", [])))]
    assert redis == ["redis"]
    for name, s in guard_services().items():
        env = s["environment"]
        assert re.fullmatch(r"redis://([^:/]+):6379/\d+", env["CITEBOUND_STATE"]).group(1) in redis, name
        for k, v in env.items():
            if k.endswith("_FILE"):
                secret = v.removeprefix("/run/secrets/")
                assert v.startswith("/run/secrets/") and secret in s["secrets"] and secret in compose()["secrets"], (k, v)


def test_the_load_balancer_checks_replicas_and_never_resends_a_label_post():
    h = haproxy()
    default_server = next(w for w in h["defaults"] if w[0] == "default-server")
    assert "check" in default_server[1:]
    assert ["use_backend", "monitor", "if", "{", "path_beg", "/v1/monitor", "}"] in h["frontend guard"]

    def retry_on(backend):
        return next(w[1:] for w in h[backend] if w[0] == "retry-on")

    # a label post counts once: it is sent again only when it never reached a replica
    assert retry_on("backend monitor") == ["conn-failure"]
    assert "conn-failure" in retry_on("backend guards")  # a verdict may be asked again


def health_paths() -> dict[str, tuple[str, bool]]:
    """{where: (path, must it answer 200 while the store is down)} of every health check the deployment makes."""
    c = guard_container()
    h = haproxy()

    def httpchk(backend):
        (method, path), = [w[2:] for w in h[backend] if w[:2] == ["option", "httpchk"]]
        assert method == "GET"
        return path

    image = re.search(r"urlopen\('http://127\.0\.0\.1:%s(/[^']*)'", (DEPLOY / "Containerfile").read_text()).group(1)
    return {"kubernetes startup": (c["startupProbe"]["httpGet"]["path"], True),
            "kubernetes liveness": (c["livenessProbe"]["httpGet"]["path"], True),
            "kubernetes readiness": (c["readinessProbe"]["httpGet"]["path"], False),
            "image HEALTHCHECK": (image, True),
            "haproxy guards": (httpchk("backend guards"), True),
            "haproxy monitor": (httpchk("backend monitor"), False)}


def test_each_health_check_asks_what_its_role_needs_while_the_store_is_down(tmp_path):
    """Against a running service on a real Redis, hung with SIGSTOP: liveness (and the image's check, and the
    verdict backend's) stays 200, or a Redis outage would restart every pod or stop every verdict; readiness
    (and the label backend's check) turns 503, or label posts would go to a replica that cannot store them."""
    pytest.importorskip("redis", reason="the [redis] extra")
    from test_state import _redis
    from test_store_down import _until

    from citebound.serving import ServeConfig
    from tests.service_helpers import running

    paths = health_paths()
    p, url = _redis(tmp_path)
    try:
        with running(ServeConfig(verifier="lexical", state=url)) as base, httpx.Client(base_url=base, timeout=30) as c:
            assert {w: c.get(path).status_code for w, (path, _) in paths.items()} == {w: 200 for w in paths}
            os.kill(p.pid, signal.SIGSTOP)
            _until(lambda: c.get("/readyz").status_code == 503, 15.0)
            seen = {w: c.get(path).status_code for w, (path, _) in paths.items()}
            assert seen == {w: 200 if up else 503 for w, (_, up) in paths.items()}
    finally:
        os.kill(p.pid, signal.SIGCONT)
        p.terminate()
        p.wait(10)
