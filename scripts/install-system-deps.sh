#!/usr/bin/env bash
# Debian packages the integration tests need; idempotent and quick when present.
#   kcat        librdkafka's CLI producer/consumer (real client)
#   prometheus  the real server + promtool (metrics tests)
#   fuse3       libfuse 3 (and fusermount3) for the power-loss tests' FUSE layer
#               (tests/integration/powerloss/; the kernel's /dev/fuse must exist too)
#   podman ...  building and running the container image without a Docker engine
#               (runc: crun refuses these hosts' cgroup layout, see
#               deploy/container/containers.conf; mmdebstrap makes the base images;
#               the CNI dnsname plugin lets compose's services find each other
#               by name, e.g. Prometheus scraping broker:9404)
set -euo pipefail
need=()
command -v kcat >/dev/null || need+=(kcat)
command -v prometheus >/dev/null || need+=(prometheus)
command -v promtool >/dev/null || need+=(prometheus)
command -v fusermount3 >/dev/null || need+=(fuse3)
command -v podman >/dev/null || need+=(podman uidmap fuse-overlayfs slirp4netns)
command -v buildah >/dev/null || need+=(buildah)
command -v runc >/dev/null || need+=(runc)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
[ -e /usr/lib/cni/dnsname ] || need+=(golang-github-containernetworking-plugin-dnsname)
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: need root to install: ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
