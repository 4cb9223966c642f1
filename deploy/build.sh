#!/usr/bin/env bash
# Build the guard's image (deploy/Containerfile) and the infra image of the compose file (Redis + HAProxy,
# deploy/Containerfile.infra), from the repository root. With --local-base, first make a Debian base with
# debootstrap from this machine's apt mirror (deploy/base/make_base.sh) and build on it: for machines that reach
# package mirrors but no image registry. Needs podman (or IMAGE_TOOL=docker) and, for --local-base, root.
# Usage: bash deploy/build.sh [--local-base]      (TAG=0.4.0 by default; BASE=... to choose the base yourself)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${IMAGE_TOOL:-podman}
tag=${TAG:-0.4.0}
args=()
if [ "${1:-}" = "--local-base" ]; then
    BASE=${BASE:-localhost/debian-python:bookworm}
    bash "$root/deploy/base/make_base.sh" "$BASE"
fi
[ -n "${BASE:-}" ] && args+=(--build-arg "BASE=$BASE")
# a machine that reaches PyPI through an intercepting proxy: the build's pip gets its pip.conf and CA bundle
# through build-time mounts, which leave nothing in the image
[ -f /etc/pip.conf ] && args+=(-v /etc/pip.conf:/etc/pip.conf:ro)
[ -n "${PIP_CERT:-}" ] && [ -f "$PIP_CERT" ] && args+=(-v "$PIP_CERT:/etc/ssl/certs/ca-certificates.crt:ro")
# Podman writes OCI images by default, and the OCI format has no HEALTHCHECK: the docker format keeps it
[ "$tool" = podman ] && args+=(--format docker)
cd "$root"
# the build stage is tagged too (citebound-build), so its layers stay the cache of the next build; then the
# images this script built earlier and a rebuild left untagged (io.citebound.build) are removed: without that,
# every rebuild leaves the old final image (~420 MB) and build stage (~900 MB) behind
"$tool" build -q "${args[@]}" --target build -t "localhost/citebound-build:$tag" -f deploy/Containerfile . >/dev/null
"$tool" build -q "${args[@]}" --build-arg "VERSION=$tag" -t "localhost/citebound:$tag" -f deploy/Containerfile . >/dev/null
"$tool" build -q "${args[@]}" -t "localhost/citebound-infra:$tag" -f deploy/Containerfile.infra deploy >/dev/null
"$tool" image prune -f --filter label=io.citebound.build >/dev/null \
    || echo "build.sh: could not remove the earlier builds' untagged images (podman image prune -f --filter label=io.citebound.build)" >&2
for image in "localhost/citebound:$tag" "localhost/citebound-infra:$tag"; do
    echo "$image: $("$tool" image inspect "$image" --format '{{.Size}}') bytes"
done
