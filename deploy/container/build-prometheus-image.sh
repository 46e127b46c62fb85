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
# shellcheck source=deploy/container/debian-image.sh
. "$(dirname "$0")/debian-image.sh"

tag="${PROMETHEUS_TAG:-localhost/broker-prometheus:bookworm}"
require_tools build-prometheus-image
image_wanted build-prometheus-image "$tag" || exit 0

start=$SECONDS
echo "build-prometheus-image: building $tag from Debian's prometheus package"
# /prometheus is the data directory compose mounts a volume on; nobody owns it
# (as in prom/prometheus), so a new volume is writable by the server.
bookworm_rootfs prometheus,ca-certificates \
  --customize-hook='mkdir -p "$1"/prometheus "$1"/etc/prometheus && chown 65534:65534 "$1"/prometheus' |
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
