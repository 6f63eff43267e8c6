#!/usr/bin/env bash
# Preflight of the arm64 image build (tools/image.sh ... arm64): this machine runs arm64 programs through Debian's
# qemu-user-static and the kernel's binfmt_misc. Mounts binfmt_misc where it is not, and registers qemu-aarch64 from
# the package's own binfmt.d entry (flags OPF: the interpreter is opened now, so it runs inside the build's chroot
# too) where it is not registered. Prints one line saying what is missing and exits 2 when it cannot.
set -euo pipefail
dir=/proc/sys/fs/binfmt_misc
entry=/usr/lib/binfmt.d/qemu-aarch64.conf
fail() { echo "arm64 under emulation: $*" >&2; exit 2; }
[ -f "$entry" ] && [ -x /usr/bin/qemu-aarch64-static ] \
  || fail "Debian's qemu-user-static is not installed (.ci/run installs it)"
if [ ! -e "$dir/register" ]; then
  [ "$(id -u)" = 0 ] || fail "binfmt_misc is not mounted at $dir, and mounting it needs root"
  mount -t binfmt_misc binfmt_misc "$dir" 2>/dev/null \
    || fail "binfmt_misc cannot be mounted at $dir (a container without CAP_SYS_ADMIN, or a kernel without it)"
fi
if [ ! -e "$dir/qemu-aarch64" ]; then
  [ "$(id -u)" = 0 ] || fail "qemu-aarch64 is not registered with binfmt_misc, and registering it needs root"
  # one line of the file, as systemd-binfmt writes it
  grep -v '^#' "$entry" | head -n 1 > "$dir/register" 2>/dev/null \
    || fail "the kernel refused qemu-aarch64's binfmt_misc entry ($entry)"
fi
grep -qx enabled "$dir/qemu-aarch64" || fail "qemu-aarch64's binfmt_misc entry is disabled ($dir/qemu-aarch64)"
grep -q "^flags: .*F" "$dir/qemu-aarch64" \
  || fail "qemu-aarch64 is registered without the F flag: it cannot run inside a chroot (re-register from $entry)"
