#!/usr/bin/env bash
# Build the broker image with podman, offline:
#   1. the local base images (build-base-images.sh; skipped when present),
#   2. a wheelhouse with the runtime and build requirements from pyproject.toml,
#      as binary wheels for the image's Python (CPython 3.11, glibc 2.36),
#   3. `podman build --network none` with this directory's containers.conf.
# Prints the image name on the last line of its output.
#
# Environment:
#   IMAGE          tag to build (default localhost/broker:<version from pyproject.toml>)
#   PYTHON         Python that runs pip for the wheelhouse (default python3.11, python3)
#   RUNTIME_BASE / BUILDER_BASE   base image tags (see build-base-images.sh)
#   CONTAINERS_CONF               default: containers.conf beside this script
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
runtime_base="${RUNTIME_BASE:-localhost/broker-runtime-base:bookworm}"
builder_base="${BUILDER_BASE:-localhost/broker-builder-base:bookworm}"
wheelhouse="$here/wheelhouse"

version="$("$python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' "$repo/pyproject.toml")"
image="${IMAGE:-localhost/broker:$version}"

RUNTIME_BASE="$runtime_base" BUILDER_BASE="$builder_base" bash "$here/build-base-images.sh"

# The requirements, one per line: build-system.requires + project.dependencies.
mapfile -t requirements < <("$python" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    d = tomllib.load(f)
print("\n".join(d["build-system"]["requires"] + d["project"]["dependencies"]))
PY
)
mkdir -p "$wheelhouse"
start=$SECONDS
# Wheels for the image's interpreter, not the host's: Debian bookworm's
# CPython 3.11 on glibc 2.36. pip does not widen a --platform it is given, so
# every manylinux tag that glibc 2.36 runs is listed.
arch="$(uname -m)"
platforms=()
for minor in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${minor}_$arch"); done
for legacy in manylinux2014 manylinux2010 manylinux1; do platforms+=(--platform "${legacy}_$arch"); done
"$python" -m pip download --quiet --disable-pip-version-check \
  --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 "${platforms[@]}" \
  --dest "$wheelhouse" "${requirements[@]}"
echo "build-image: wheelhouse ready in $((SECONDS - start)) s ($(find "$wheelhouse" -name '*.whl' | wc -l) wheels)"

start=$SECONDS
podman build --quiet --network none --pull=never --format docker \
  --build-arg "BUILDER_IMAGE=$builder_base" \
  --build-arg "RUNTIME_IMAGE=$runtime_base" \
  --build-arg "VERSION=$version" \
  --tag "$image" --file "$repo/Dockerfile" "$repo" >/dev/null
echo "build-image: $image built in $((SECONDS - start)) s," \
  "$(podman image inspect --format '{{.Size}}' "$image") bytes"
echo "$image"
