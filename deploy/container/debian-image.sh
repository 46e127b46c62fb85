# Sourced by build-base-images.sh and build-prometheus-image.sh: a Debian
# bookworm root file system from Debian's archive with mmdebstrap (no image
# registry), streamed into `podman import`.
#
#   require_tools NAME            mmdebstrap and podman present, else exit 1
#   image_wanted NAME TAG         false (and says so) when TAG exists and FORCE is unset
#   bookworm_rootfs PACKAGES [mmdebstrap options...]
#                                 the root file system as a tar on stdout
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# DEBIAN_SECURITY (default http://deb.debian.org/debian-security), FORCE=1.
# CONTAINERS_CONF defaults to containers.conf beside this file.

container_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$container_dir/containers.conf}"
debian_mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
debian_security="${DEBIAN_SECURITY:-http://deb.debian.org/debian-security}"

require_tools() {
  local name="$1" tool
  for tool in mmdebstrap podman; do
    command -v "$tool" >/dev/null || {
      echo "$name: $tool is missing (scripts/install-system-deps.sh installs it)" >&2
      exit 1
    }
  done
}

image_wanted() {
  local name="$1" tag="$2"
  if [ -z "${FORCE:-}" ] && podman image exists "$tag"; then
    echo "$name: $tag exists, skipping (FORCE=1 rebuilds)"
    return 1
  fi
  return 0
}

# Docs, man pages and translations are dead weight in a container. The
# merged-usr hook sets up /usr without the usrmerge package (which would pull
# in perl, 50 MB) and installs usr-is-merged instead.
bookworm_rootfs() {
  local packages="$1"
  shift
  mmdebstrap --quiet --variant=minbase --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --aptopt='APT::Install-Recommends "false"' \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    "$@" \
    bookworm - \
    "deb $debian_mirror bookworm main" \
    "deb $debian_mirror bookworm-updates main" \
    "deb $debian_security bookworm-security main"
}
