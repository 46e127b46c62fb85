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
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY:-http://deb.debian.org/debian-security}"
runtime_tag="${RUNTIME_BASE:-localhost/broker-runtime-base:bookworm}"
builder_tag="${BUILDER_BASE:-localhost/broker-builder-base:bookworm}"

for tool in mmdebstrap podman; do
  command -v "$tool" >/dev/null || {
    echo "build-base-images: $tool is missing (scripts/install-system-deps.sh installs it)" >&2
    exit 1
  }
done

# Docs, man pages and translations are dead weight in a container. The
# merged-usr hook sets up /usr without the usrmerge package (which would pull
# in perl, 50 MB) and installs usr-is-merged instead.
slim=(
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/locale/*'
)

build() {
  local tag="$1" packages="$2"
  if [ -z "${FORCE:-}" ] && podman image exists "$tag"; then
    echo "build-base-images: $tag exists, skipping"
    return 0
  fi
  local start=$SECONDS
  echo "build-base-images: building $tag ($packages)"
  # The image's pip may install into the system Python (venvs are used
  # anyway); python is python3, as in the python:3.11-slim images.
  mmdebstrap --quiet --variant=minbase --include="$packages" "${slim[@]}" \
    --aptopt='APT::Install-Recommends "false"' \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --customize-hook='rm -f "$1"/usr/lib/python3.*/EXTERNALLY-MANAGED' \
    --customize-hook='ln -sf python3 "$1"/usr/bin/python' \
    bookworm - \
    "deb $mirror bookworm main" \
    "deb $mirror bookworm-updates main" \
    "deb $security bookworm-security main" |
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
