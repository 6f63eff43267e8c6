#!/usr/bin/env bash
# `make image`: builds the Dockerfile with Debian's buildah, with no image registry, and writes the image as an
# OCI archive. Usage: tools/image.sh VERSION ARCHIVE WHEELHOUSE [ARCH]
#
# - ARCH is amd64 (the default) or arm64. The Dockerfile's build stage runs natively on this machine for both: pip
#   installs the lock's wheels for ARCH from WHEELHOUSE (`make wheelhouse-arm64` holds the aarch64 files) and the
#   build stage's Debian python3 byte-compiles them. What only a machine of ARCH can do, configuring ARCH's Debian
#   packages (their maintainer scripts, python3's byte-compiling its standard library), is done once, when the
#   base of a foreign ARCH is made: mmdebstrap installs Debian's minbase and the Dockerfile's pinned python3
#   together, dpkg and those scripts under emulation (Debian's qemu-user-static through binfmt_misc: tools/binfmt.sh
#   sets it up or says what is missing), and the build takes that base for the Dockerfile's python stage
#   (`--build-context python=...`), so no step of the Dockerfile runs under emulation.
#
# - Everything buildah keeps (layers, its state, temporary files) and the bases lives under build/containers, or
#   under CONTAINERS_DIR when set (a cold build in a fresh folder, beside a warm one): vfs storage and chroot
#   isolation, so neither a kernel overlay nor a container runtime is needed, and nothing outside the repository is
#   written.
# - The Dockerfile's base, debian:bookworm-slim, cannot be pulled here: when missing, mmdebstrap builds Debian
#   bookworm's minbase (slimmed as the official image is: no docs, man pages or locales) from the Debian
#   archive and it is stored under that name, so the Dockerfile is built unchanged.
# - pip inside the build installs from the wheelhouse (`make wheelhouse`, the lock's files checked by hash), mounted
#   read-only at /mnt, and told so through the build stage's PIP_NO_INDEX and PIP_FIND_LINKS build arguments: a
#   mount and arguments, never a layer. /mnt, the place for a temporary mount, is in the base image already; a
#   mount at a new path (/wheels, /etc/pip.conf) would leave its empty mount point in a layer of the final image.
#   A Docker build without the arguments installs from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: $0 VERSION ARCHIVE WHEELHOUSE [amd64|arm64]" >&2; exit 2; }
version=$1
archive=$2
wheelhouse=$(realpath "$3")
arch=${4:-amd64}
store=$(realpath -m "${CONTAINERS_DIR:-build/containers}")
# The reference inside the archive, fully qualified so that containerd (`ctr images import`) and the kubelet
# name it the same: a pod's `image: gpu-admission:<version>` is this reference.
name=docker.io/library/gpu-admission:$version
case $arch in
  amd64|arm64) ;;
  *) echo "make image: no architecture $arch (amd64 or arm64)" >&2; exit 2 ;;
esac
# This machine's architecture (the build stage's), and the Dockerfile's base for it. A foreign ARCH's image is kept
# under its own name in the store (the archive names it as the native one is named), and its python stage's
# replacement under another.
native=$(dpkg --print-architecture)
base=docker.io/library/debian:bookworm-slim
# (named by the Dockerfile's python3 pin, so that a new pin makes a new base)
python3=$(grep -o -m 1 'python3=[^ ]*' Dockerfile)
python_base=localhost/debian-python3-$arch:bookworm-slim-$(echo "${python3#*=}" | tr '+~:' '---')
local_name=$name
[ "$arch" = "$native" ] || local_name=localhost/gpu-admission:$version-$arch
# Reproducible timestamps: the last commit's time (files, layers and the image's creation date).
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "make image: $tool is missing (Debian package $tool; .ci/run installs it)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "make image: buildah's vfs storage with chroot isolation needs root" >&2; exit 2; }
[ -d "$wheelhouse" ] || { echo "make image: no wheelhouse at $3 (make wheelhouse)" >&2; exit 2; }

mkdir -p "$store/tmp"
# buildah's own configuration, not the host's: accept local images unsigned, resolve short names on docker.io.
printf '{"default": [{"type": "insecureAcceptAnything"}]}\n' > "$store/policy.json"
printf 'unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n' > "$store/registries.conf"
export TMPDIR=$store/tmp CONTAINERS_REGISTRIES_CONF=$store/registries.conf BUILDAH_ISOLATION=chroot
# the OCI platform's variant of an architecture, as Docker and containerd name them
declare -A variant_of=([arm64]=v8)
bah() { buildah --root "$store/storage" --runroot "$store/run" --storage-driver vfs "$@"; }

# base NAME ARCH [PACKAGE...]: Debian bookworm's minbase for ARCH with PACKAGEs, made by mmdebstrap (its rootfs kept
# as a tar under the store) and stored as the image NAME, unless the store has it.
base() {
  local name=$1 arch=$2 rootfs variant=${variant_of[$2]:-}
  shift 2
  bah inspect --type image "$name" >/dev/null 2>&1 && return
  rootfs=$store/$(echo "${name#*/}" | tr /: --).tar
  [ "$arch" = "$native" ] || tools/binfmt.sh
  if [ ! -s "$rootfs" ]; then
    echo "make image: building $name with mmdebstrap (Debian bookworm minbase${*:+ and $*} from deb.debian.org)" >&2
    # apt as in the official image: no package files or caches kept after an install, compressed lists.
    export APT_SLIM='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::GzipIndexes "true";
Acquire::Languages "none";
Apt::AutoRemove::SuggestsImportant "false";'
    # (With no pkgcache configured, mmdebstrap's own cleanup no longer finds the caches apt wrote: removed here.)
    # The host's resolv.conf and hostname that mmdebstrap copies in stay out. The apt sources are the official
    # image's (bookworm, its updates, its security archive), over http. (PACKAGEs come without their
    # recommends, as the Dockerfile's apt steps install them: mmdebstrap's default.)
    SOURCE_DATE_EPOCH=$epoch mmdebstrap --quiet --variant=minbase --mode=root --format=tar --architectures="$arch" \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      ${*:+--include="$*"} \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"' \
      --customize-hook='printf "%s\n" "$APT_SLIM" > "$1/etc/apt/apt.conf.d/docker-clean"; rm -f "$1"/var/cache/apt/*.bin' \
      bookworm "$rootfs.part" \
      "deb http://deb.debian.org/debian bookworm main" \
      "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" >&2 \
      || { echo "make image: mmdebstrap could not build Debian bookworm from http://deb.debian.org" >&2; exit 1; }
    mv "$rootfs.part" "$rootfs"
  fi
  container=$(bah from --signature-policy "$store/policy.json" scratch)
  bah add --quiet "$container" "$rootfs" / >/dev/null
  bah config --os linux --arch "$arch" ${variant:+--variant "$variant"} --cmd bash \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$container"
  bah commit --quiet --timestamp "$epoch" --identity-label=false "$container" "$name" >/dev/null
  bah rm "$container" >/dev/null
}

# The build stage's base (this machine's); for a foreign ARCH, the python stage's replacement: minbase with the
# Dockerfile's python3 (named by its image ID: buildah looks a build context's name up as a registry's).
# BUILDPLATFORM and TARGETARCH are given, as BuildKit sets them, for buildah releases that leave them unset.
base "$base" "$native"
build_args=(--build-arg "BUILDPLATFORM=linux/$native" --build-arg "TARGETARCH=$arch")
if [ "$arch" != "$native" ]; then
  base "$python_base" "$arch" "$python3"
  build_args+=(--platform "linux/$arch${variant_of[$arch]:+/${variant_of[$arch]}}"
               --build-context "python=container-image://$(bah inspect --type image --format '{{.FromImageID}}' "$python_base")")
fi

# --layers: a rebuild reuses every step whose inputs did not change (the apt steps, the lock's install).
bah bud --quiet --signature-policy "$store/policy.json" --pull=false --layers --timestamp "$epoch" \
  --identity-label=false --volume "$wheelhouse:/mnt:ro" --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/mnt \
  "${build_args[@]}" --file Dockerfile --tag "$local_name" . >/dev/null
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
bah push --quiet --signature-policy "$store/policy.json" "$local_name" "oci-archive:$archive:$name"
echo "$archive"
