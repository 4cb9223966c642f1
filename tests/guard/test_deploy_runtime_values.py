"""What the deployment's files must do at run time (#56 round 95), checked from the files and, for the two
wrapper scripts and Redis's persistence, by running them: a replica that dies comes back and is found at its
new address, a verdict is asked again of another replica whichever way the first one failed, every replica
waits for the store at start, the image's checks and ownership hold, the pods can read their own secrets,
and the compose Redis keeps what it acknowledged across a restart."""
from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from service_helpers import free_port
from test_deploy_scripts import _wheel
from test_deploy_values import BASE, DEPLOY, compose, guard_container, guard_services, haproxy, k8s_config, pod


def seconds(text: str) -> float:
    """An HAProxy duration (``1s``, ``500ms``, ``2m``; a bare number is milliseconds) in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s|m|h|d)?", text)
    assert m, text
    scale = {"us": 1e-6, "ms": 1e-3, None: 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * scale


def default_server() -> list[str]:
    return next(w for w in haproxy()["defaults"] if w[0] == "default-server")


def after(words: list[str], key: str) -> str:
    return words[words.index(key) + 1]


def test_seconds_reads_haproxy_durations():
    assert [seconds(t) for t in ("1s", "500ms", "2m", "250", "1.5s")] == [1.0, 0.5, 120.0, 0.25, 1.5]


def test_a_verdict_is_asked_again_of_another_replica_whichever_way_the_first_failed():
    h = haproxy()
    retry_on = next(w[1:] for w in h["backend guards"] if w[0] == "retry-on")
    # refused (not listening), reset with nothing sent (killed mid-answer), no answer in time, or the replica's
    # own failure statuses: a guard request is a verdict, asking again is safe
    assert {"conn-failure", "empty-response", "response-timeout", "502", "503", "504"} <= set(retry_on), retry_on
    # ... and the retry goes to another replica, not back to the one that failed it
    defaults = h["defaults"]
    redispatch = [w for w in defaults if w[:2] == ["option", "redispatch"]]
    assert redispatch and (len(redispatch[0]) == 2 or int(redispatch[0][2]) >= 1), defaults
    assert int(next(w[1] for w in defaults if w[0] == "retries")) >= 1


def test_a_restarted_replica_is_found_at_its_new_address_as_fast_as_a_dead_one_is_marked_down():
    ds = default_server()
    assert after(ds, "resolvers") in {s.split()[1] for s in haproxy() if s.startswith("resolvers ")}
    down_after = seconds(after(ds, "inter")) * int(after(ds, "fall"))  # 1 s x 2
    resolvers = next(v for k, v in haproxy().items() if k.startswith("resolvers "))
    holds = {w[1]: seconds(w[2]) for w in resolvers if w[0] == "hold"}
    # a name's last answer is kept this long; past it HAProxy asks the container network's DNS again
    assert holds["valid"] <= down_after and holds.get("obsolete", 0) <= down_after, (holds, down_after)


def test_every_compose_service_comes_back_when_it_dies():
    services = compose()["services"]
    assert {"redis", "guard-1", "guard-2", "lb"} <= set(services)  # more replicas may be added (guard-3, ...)
    assert {n: s.get("restart") for n, s in services.items()} == {n: "always" for n in services}


def serve_default_state_wait() -> float:
    import argparse

    from citebound.cli import serve

    ap = argparse.ArgumentParser()
    serve.add_parser(ap.add_subparsers())
    return ap.parse_args(["serve"]).state_wait


def test_every_replica_waits_for_the_store_at_least_as_long_as_serve_does_by_default():
    default = serve_default_state_wait()
    assert default == 30.0  # serve --help's value
    for name, s in guard_services().items():
        assert float(s["environment"]["CITEBOUND_STATE_WAIT"]) >= default, name
    assert float(k8s_config()["state_wait"]) >= default


def test_the_image_and_the_pods_listen_on_every_interface():
    """A container's loopback is its own: a guard listening on 127.0.0.1 inside it answers no one outside."""
    for f in (DEPLOY / "config.yaml", BASE / "config.yaml", DEPLOY / "kubernetes" / "overlays" / "podman" / "config.yaml"):
        cfg = yaml.safe_load(f.read_text())
        assert cfg.get("host") in ("0.0.0.0", "::"), (f, cfg.get("host"))
    for name, s in guard_services().items():  # nothing in compose sets another
        assert "CITEBOUND_HOST" not in s["environment"] and "--host" not in str(s.get("command", "")), name


def test_the_image_gives_its_volume_to_the_user_it_runs_as():
    cf = (DEPLOY / "Containerfile").read_text()
    final = cf.rsplit("\nFROM ", 1)[1]
    user = re.findall(r"^USER (\S+)$", final, re.M)[-1]
    (volume,) = re.findall(r'^VOLUME \["([^"]+)"\]$', final, re.M)
    owners = dict((path, owner) for owner, path in re.findall(r"chown (\S+) (\S+)", final))
    assert owners.get(volume) == user, (volume, owners, user)


def wheel_check() -> str:
    """The Containerfile's check that the built wheel carries the graph (a ``python -c`` program)."""
    (prog,) = re.findall(r'python -c "([^"]*zipfile[^"]*)"', (DEPLOY / "Containerfile").read_text())
    return prog


@pytest.mark.parametrize("members, ok", [(["citebound/__init__.py", "citebound/models/minilm/model.onnx"], True),
                                         (["citebound/__init__.py", "citebound/models/minilm/graph.json"], False),
                                         (["citebound/models/minilm/model.onnx.part"], False)])
def test_the_image_build_stops_when_its_wheel_lacks_the_graph(tmp_path, members, ok):
    dist = tmp_path / "dist"
    dist.mkdir()
    _wheel(dist / "citebound-0.4.0-py3-none-any.whl", members)
    prog = wheel_check().replace("'/dist/", f"'{dist}/")
    assert str(dist) in prog
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert (r.returncode == 0) is ok, (r.returncode, r.stderr)
    if not ok:
        assert "lacks the graph" in r.stderr


def test_the_pods_can_read_the_secrets_they_mount():
    """A Secret's files belong to root; mode 0400 lets only the owner read them, unless the pod's fsGroup
    owns them (the kubelet gives that group read access): without it the guard, uid 10001, cannot read its
    admin token or Redis password."""
    spec = pod()["spec"]
    sc = spec["securityContext"]
    secrets = [v for v in spec["volumes"] if "secret" in v]
    assert secrets
    for v in secrets:
        mode = v["secret"].get("defaultMode", 0o644)
        if not mode & stat.S_IROTH:
            assert sc.get("fsGroup") == sc["runAsGroup"], (v["name"], oct(mode), sc)
    mounted = {m["name"] for m in guard_container()["volumeMounts"]}
    assert {v["name"] for v in secrets} <= mounted
    redis = next(d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "components" / "redis" / "redis.yaml").read_text())
                 if d["kind"] == "StatefulSet")["spec"]["template"]["spec"]
    rsecret = next(v for v in redis["volumes"] if "secret" in v)
    if not rsecret["secret"].get("defaultMode", 0o644) & stat.S_IROTH:
        assert redis["securityContext"].get("fsGroup") is not None


def fake(folder: Path, name: str, body: str) -> None:
    p = folder / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)


def test_haproxy_with_dns_takes_the_first_nameserver_only(tmp_path):
    """The wrapper run for real, its resolv.conf and HAProxy swapped for files here: with two nameservers
    (the container network's first, a host resolver after it), HAProxy is given the first alone."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake(bin_, "haproxy", 'printf "%s\\n" "$NAMESERVER" > "$OUT"\n')
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("# generated\nsearch dns.podman\nnameserver 10.89.0.1\nnameserver 192.168.1.1\noptions edns0\n")
    script = tmp_path / "haproxy-with-dns"
    text = (DEPLOY / "compose" / "haproxy-with-dns").read_text()
    assert text.count("' /etc/resolv.conf)") == 1  # the file awk reads
    script.write_text(text.replace("' /etc/resolv.conf)", f"' {resolv})"))
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "OUT": str(out)}
    r = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "10.89.0.1\n"
    resolv.write_text("search example\n")  # no nameserver: one error line, exit 2
    r = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "names no nameserver" in r.stderr


def redis_conf(tmp_path: Path, password: str) -> str:
    """The configuration redis-with-secret writes, from the script run for real (redis-server swapped for cat)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    fake(bin_, "redis-server", 'cat "$1"\n')
    pw = tmp_path / "pw"
    pw.write_text(password + "\n")
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}
    r = subprocess.run(["sh", str(DEPLOY / "compose" / "redis-with-secret"), str(pw)], env=env, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_compose_redis_keeps_what_it_acknowledged_across_a_kill(tmp_path):
    """redis-with-secret's configuration, run by a real redis-server (on a loopback port and a folder here
    instead of 6379 and /data, the only lines changed): a value written, Redis killed with SIGKILL, started again on the same
    folder: the value is there. Without append-only persistence it is gone."""
    pytest.importorskip("redis", reason="the [redis] extra")
    import redis

    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed (.ci/run installs Debian's redis-server)")
    conf_text = redis_conf(tmp_path, "s3cret-pass")
    lines = dict(line.split(" ", 1) for line in conf_text.splitlines() if line)
    assert lines["requirepass"] == '"s3cret-pass"' and lines["dir"] == "/data" and lines["port"] == "6379"
    data = tmp_path / "data"
    data.mkdir()
    conf = tmp_path / "redis.conf"
    conf.write_text(conf_text.replace("dir /data\n", f"dir {data}\n"))  # redis changes into it as it reads the line
    port = free_port()

    def start():
        p = subprocess.Popen([exe, str(conf), "--port", str(port), "--dir", str(data), "--bind", "127.0.0.1"],
                             stdout=subprocess.DEVNULL)
        for _ in range(200):
            if p.poll() is not None:
                raise AssertionError(f"redis-server exited with {p.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            p.kill()
            raise AssertionError("redis-server did not start")
        c = redis.Redis(host="127.0.0.1", port=port, password="s3cret-pass", socket_timeout=2)
        for _ in range(100):  # loading its append-only file after a restart: LOADING until done
            try:
                c.ping()
                return p, c
            except redis.BusyLoadingError:
                time.sleep(0.05)
        p.kill()
        raise AssertionError("redis-server did not finish loading")

    p, c = start()
    try:
        c.set("citebound:monitor", '{"n": 7}')
        time.sleep(1.5)  # appendfsync everysec: on disk within a second
    finally:
        p.kill()
        p.wait(10)
    p, c = start()
    try:
        assert c.get("citebound:monitor") == b'{"n": 7}'
    finally:
        p.kill()
        p.wait(10)
