#!/usr/bin/env bash
# Build a Prometheus image from Debian's own package, with mmdebstrap (no
# image registry needed), and import it into podman's store as
#   localhost/broker-prometheus:bookworm   Debian's prometheus (2.42), run as nobody
# for deploy/compose.yaml on a host that reaches Debian's archive but no image
# registry: PROMETHEUS_IMAGE=localhost/broker-prometheus:bookworm. It takes the
# same arguments as prom/prometheus (compose passes --config.file and
# --storage.tsdb.path=/prometheus). Idempotent: an existing tag is left alone
# (FORCE=1 rebuilds).
#
# Environment:
#   DEBIAN_MIRROR      default http://deb.debian.org/debian
#   DEBIAN_SECURITY    default http://deb.debian.org/debian-security
#   PROMETHEUS_TAG     default localhost/broker-prometheus:bookworm
#   FORCE=1            rebuild even when the tag exists
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY:-http://deb.debian.org/debian-security}"
tag="${PROMETHEUS_TAG:-localhost/broker-prometheus:bookworm}"

for tool in mmdebstrap podman; do
  command -v "$tool" >/dev/null || {
    echo "build-prometheus-image: $tool is missing (scripts/install-system-deps.sh installs it)" >&2
    exit 1
  }
done
if [ -z "${FORCE:-}" ] && podman image exists "$tag"; then
  echo "build-prometheus-image: $tag exists, skipping (FORCE=1 rebuilds)"
  exit 0
fi

start=$SECONDS
echo "build-prometheus-image: building $tag from Debian's prometheus package"
# /prometheus is the data directory compose mounts a volume on; nobody owns it
# (as in prom/prometheus), so a new volume is writable by the server.
mmdebstrap --quiet --variant=minbase --include=prometheus,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --aptopt='APT::Install-Recommends "false"' \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --customize-hook='mkdir -p "$1"/prometheus "$1"/etc/prometheus && chown 65534:65534 "$1"/prometheus' \
  bookworm - \
  "deb $mirror bookworm main" \
  "deb $mirror bookworm-updates main" \
  "deb $security bookworm-security main" |
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'USER 65534:65534' \
    --change 'WORKDIR /prometheus' \
    --change 'EXPOSE 9090' \
    --change 'ENTRYPOINT ["/usr/bin/prometheus"]' \
    --change 'CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]' \
    --message "mmdebstrap bookworm minbase: prometheus" \
    - "$tag" >/dev/null
echo "build-prometheus-image: $tag built in $((SECONDS - start)) s"
