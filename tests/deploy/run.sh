#!/usr/bin/env bash
# The guard where labs deploy, run for real with Podman (as root; CI's): build the base (debootstrap, no
# registry), the guard's image and the infra image (Redis + HAProxy); run the quickstart's guard in the image
# read-only, non-root, with no network; bring the compose deployment up (2 replicas, Redis with a password and
# append-only persistence, HAProxy) and check what its clients see (tests/deploy/check_compose.py: load, the
# Responses and Messages faces through their SDKs, kill -9, labels, Redis stopped and started); take it down and check nothing is left; then render the Kubernetes
# manifests, check their fields (tests/deploy/check_kube.py) and play the rendered Deployment, ConfigMaps,
# Secrets and Redis with `podman kube play`, guard through it, and take it down.
# Usage: bash tests/deploy/run.sh [WORKDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wd=${1:-$(mktemp -d /tmp/citebound-deploy.XXXXXX)}
py=${PYTHON:-python3}
mkdir -p "$wd"
export CONTAINERS_CONF="$root/tests/deploy/containers.conf"
image=localhost/citebound:0.4.0
step() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
t0=$(date +%s)
bash "$root/deploy/build.sh" --local-base >"$wd/build.log" 2>&1 || { tail -30 "$wd/build.log"; exit 1; }
step "images built: $(tr '\n' ' ' <"$wd/build.log")"
[ "$(podman image inspect "$image" --format '{{.Config.User}}')" = "10001:10001" ] || { echo "FAIL: the image's user is not 10001"; exit 1; }
[ "$(podman image inspect "$image" --format '{{index .Labels "org.opencontainers.image.version"}}')" = 0.4.0 ] \
    && podman image inspect "$image" --format '{{.HealthCheck.Test}}' | grep -q livez \
    || { echo "FAIL: the image's OCI version label or its HEALTHCHECK"; exit 1; }

# the quickstart's guard in the image: read-only root, non-root, no network
podman run --rm --no-healthcheck --read-only --network none --entrypoint sh "$image" -c \
    'test "$(id -u)" = 10001 && citebound guard --input "$(citebound example)" --verifier embedding' >"$wd/quickstart.txt" \
    || { cat "$wd/quickstart.txt"; echo "FAIL: the quickstart in the image"; exit 1; }
grep -q "INVALID" "$wd/quickstart.txt" || { cat "$wd/quickstart.txt"; echo "FAIL: the quickstart flagged nothing"; exit 1; }
# a config error is one line and status 2, in the image too
set +e; err=$(podman run --rm --no-healthcheck --read-only --network none -e CITEBOUND_PORT=99999 "$image" 2>&1); rc=$?; set -e
[ "$rc" = 2 ] && [ "$(echo "$err" | wc -l)" = 1 ] || { echo "$err"; echo "FAIL: a bad port is not one line and status 2 (rc $rc)"; exit 1; }
step "quickstart in the image (read-only, uid 10001, no network): ok; a bad key: '$err'"

# compose: 2 replicas + Redis + HAProxy
proj=citebound-ci-$$
secrets="$wd/secrets"; rm -rf "$secrets"; mkdir -p "$secrets"
head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$secrets/redis_password"
echo "admin-$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" >"$secrets/admin_token"
chown 10001:10001 "$secrets"/*; chmod 0400 "$secrets"/*
lb=$(( 20000 + RANDOM % 10000 )); g1=$(( lb + 1 )); g2=$(( lb + 2 )); up=$(( lb + 3 ))
# the replicas' upstream: the scripted Responses and Messages API check_compose.py serves on the host
compose() { CITEBOUND_SECRETS="$secrets" LB_PORT=$lb GUARD1_PORT=$g1 GUARD2_PORT=$g2 \
    CITEBOUND_TEST_UPSTREAM="http://host.containers.internal:$up/v1" podman-compose -p "$proj" \
    -f "$root/deploy/compose/compose.yaml" -f "$root/tests/deploy/compose.upstream.yaml" "$@"; }
kube_down() { podman kube down "$wd/kube.yaml" >/dev/null 2>&1 || true
    podman volume ls -q | grep -E '^citebound-(config|calibrations)-' | xargs -r podman volume rm -f >/dev/null 2>&1 || true; }
cleanup() { compose down -v >/dev/null 2>&1 || true; kube_down; }
trap cleanup EXIT
compose up -d >"$wd/compose-up.log" 2>&1 || { tail -30 "$wd/compose-up.log"; exit 1; }
step "compose up ($proj)"
"$py" "$root/tests/deploy/check_compose.py" --lb "http://127.0.0.1:$lb" --replica "http://127.0.0.1:$g1" \
    --replica "http://127.0.0.1:$g2" --token-file "$secrets/admin_token" \
    --container "guard-1=${proj}_guard-1_1" --container "redis=${proj}_redis_1" --upstream-port "$up" --out "$wd/compose.json" \
    || { for s in guard-1 guard-2 lb redis; do echo "--- $s"; podman logs --tail 15 "${proj}_${s}_1" 2>&1; done; exit 1; }
compose down -v >"$wd/compose-down.log" 2>&1
left=$(podman ps -a --filter "label=io.podman.compose.project=$proj" --format '{{.Names}}')
[ -z "$left" ] || { echo "FAIL: podman-compose down left: $left"; exit 1; }
step "compose down: nothing left"

# Kubernetes: render, check the fields, play what podman can play
"$py" "$root/tests/deploy/check_kube.py" render --root "$root" --play "$wd/kube.yaml" --secrets "$secrets"
podman kube play "$wd/kube.yaml" >"$wd/kube-play.log" 2>&1 || { cat "$wd/kube-play.log"; exit 1; }
"$py" "$root/tests/deploy/check_kube.py" serve --url http://127.0.0.1:18090 --token-file "$secrets/admin_token" \
    || { podman logs --tail 20 citebound-pod-0-guard 2>&1; exit 1; }
kube_down
step "kubernetes: rendered, checked, played, guarded through, down"
# passed: the workdir (logs, and the deployment's generated secrets) goes unless the caller named it; a failure
# keeps it for its logs
[ -n "${1:-}" ] || rm -rf "$wd"
