#!/usr/bin/env bash
# A Debian base image made locally, for machines that reach package mirrors but no image registry:
# debootstrap a minimal bookworm with Python 3 and venv, then `podman import` it (an imported image has no
# PATH of its own, so the import sets one). The guard's image and the load balancer's build FROM it:
#   podman build --build-arg BASE=localhost/debian-python:bookworm -f deploy/Containerfile .
# Elsewhere the Containerfile's default base (an official python slim image) needs none of this.
# Needs root, debootstrap and podman. Takes about 2 minutes and makes about 275 MB.
# Usage: bash deploy/base/make_base.sh [IMAGE]     (default localhost/debian-python:bookworm)
set -euo pipefail
image=${1:-localhost/debian-python:bookworm}
suite=${SUITE:-bookworm}
# the mirror apt already uses on this machine (deb822 or one-line sources), else Debian's CDN
mirror=${MIRROR:-$(grep -hoE '^URIs: *[^ ]+|^deb +[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v security | head -1 | awk '{print $2}' || true)}
mirror=${mirror:-http://deb.debian.org/debian}
if podman image exists "$image"; then echo "$image exists (podman rmi it to make it anew)"; exit 0; fi
rootfs=$(mktemp -d /tmp/citebound-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates "$suite" "$rootfs" "$mirror" \
    >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log"; echo "error: debootstrap $suite from $mirror failed (log: $rootfs.log)"; exit 1; }
rm -f "$rootfs.log"  # kept only when debootstrap fails
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/info/*
tar -C "$rootfs" -c . | podman import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV LANG=C.UTF-8" - "$image" >/dev/null
echo "$image: $(podman image inspect "$image" --format '{{.Size}}') bytes"
