#!/usr/bin/env bash
# Build the two local base images the Dockerfile starts from, with mmdebstrap
# from Debian's archive (no image registry needed), and import them into
# podman's store:
#   localhost/broker-runtime-base:bookworm  python3, python3-venv, ca-certificates, tini
#   localhost/broker-builder-base:bookworm  the same plus build-essential, python3-dev
# Idempotent: an image whose tag already exists is left alone (FORCE=1 rebuilds).
#
# Environment:
#   DEBIAN_MIRROR      default http://deb.debian.org/debian
#   DEBIAN_SECURITY    default http://deb.debian.org/debian-security
#   RUNTIME_BASE       default localhost/broker-runtime-base:bookworm
#   BUILDER_BASE       default localhost/broker-builder-base:bookworm
#   FORCE=1            rebuild even when the tags exist
set -euo pipefail
# shellcheck source=deploy/container/debian-image.sh
. "$(dirname "$0")/debian-image.sh"

runtime_tag="${RUNTIME_BASE:-localhost/broker-runtime-base:bookworm}"
builder_tag="${BUILDER_BASE:-localhost/broker-builder-base:bookworm}"
require_tools build-base-images

build() {
  local tag="$1" packages="$2"
  image_wanted build-base-images "$tag" || return 0
  local start=$SECONDS
  echo "build-base-images: building $tag ($packages)"
  # The image's pip may install into the system Python (venvs are used
  # anyway); python is python3, as in the python:3.11-slim images.
  bookworm_rootfs "$packages" \
    --customize-hook='rm -f "$1"/usr/lib/python3.*/EXTERNALLY-MANAGED' \
    --customize-hook='ln -sf python3 "$1"/usr/bin/python' |
    podman import --quiet \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["/bin/bash"]' \
      --message "mmdebstrap bookworm minbase: $packages" \
      - "$tag" >/dev/null
  echo "build-base-images: $tag built in $((SECONDS - start)) s"
}

build "$runtime_tag" "python3,python3-venv,ca-certificates,tini"
build "$builder_tag" "python3,python3-venv,python3-dev,build-essential,ca-certificates"
