#!/usr/bin/env bash
# Proves, HERE, that .device-bundle/bundle.tar.xz is self-contained: unpacks it into a chroot that
# holds only glibc, the bundle, the scenarios and CUDA's library folder (as the device machine's
# toolkit would provide it), and runs the carried binaries there with nothing else on the library
# path: plan, sim, calibrate and compare, `tandem run -n 1 --driver host` through the bundle's
# mpirun (orted, MCA plugins, help files), and `tandem run --driver cuda` / tandem-ceilings, which
# must reach "no CUDA device" (exit 2) on a machine without a GPU. Needs root (chroot, bind mounts).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cuda_lib=${CUDA_LIB:-$(dirname "$(readlink -f /usr/local/cuda/lib*/libcudart.so.13 | head -1)")}
R=$(mktemp -d /tmp/tandem-chroot.XXXXXX)
cleanup() {
  for m in "$R/usr/local/cuda/lib" "$R/dev/shm" "$R/dev" "$R/sys" "$R/proc"; do umount -l "$m" 2>/dev/null; done
  rm -rf --one-file-system "$R"
}
trap cleanup EXIT
mkdir -p "$R"/{b,w,tmp,proc,sys,dev,lib64,lib/x86_64-linux-gnu,usr/local/cuda/lib}
chmod 1777 "$R/tmp"
tar -C "$R/b" -xJf "$root/.device-bundle/bundle.tar.xz"
cp -r "$root/scenarios" "$R/w/"
cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
for l in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libresolv.so.2 libutil.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$l" "$R/lib/x86_64-linux-gnu/"
done
mount --bind /proc "$R/proc" && mount --bind /sys "$R/sys" && mount --bind /dev "$R/dev" && mkdir -p "$R/dev/shm" &&
  mount -t tmpfs tmpfs "$R/dev/shm" && mount --bind -o ro "$cuda_lib" "$R/usr/local/cuda/lib" ||
  { echo "check_bundle: cannot mount (needs root)"; exit 1; }
# The environment validate_h200.sh sets there, with B=/b; nothing from this machine's.
envs=$(env -i B=/b PATH=/usr/bin:/bin bash -c '. /dev/stdin; env' <"$R/b/env.sh" | grep -v '^_=\|^SHLVL=\|^PWD=')
mapfile -t envarr <<<"$envs"
envarr+=("LD_LIBRARY_PATH=/b/lib:/b/lib-cxx:/usr/local/cuda/lib" "HOME=/tmp" "TMPDIR=/tmp")
fails=0
chroot_bin=$(command -v chroot)
t() {  # EXPECTED-EXIT DESCRIPTION -- COMMAND...
  local want=$1 what=$2; shift 3
  local out rc
  out=$(cd "$R" && env -i "${envarr[@]}" "$chroot_bin" --userspec=0:0 "$R" "$@" 2>&1)
  rc=$?
  if [ "$rc" = "$want" ]; then echo "ok   ($rc) $what"; else echo "FAIL ($rc, want $want) $what"; fails=$((fails + 1)); fi
  echo "$out" | tail -n "${TAIL:-3}" | sed 's/^/       /'
}
s13=/w/scenarios/gpt-1.3b-h200.textproto
s67=/w/scenarios/gpt-6.7b-h200.textproto
tiny=/w/scenarios/tiny-gpt.textproto
t 0 "tandem-plan 6.7B" -- /b/bin/tandem-plan $s67
t 0 "tandem-sim 1.3B (SimGrid)" -- /b/bin/tandem-sim $s13 --trace /tmp/p13.trace
t 0 "tandem-run -n 1 --driver host tiny (bundle's mpirun, plugins, OpenBLAS)" -- \
  /b/bin/tandem-run -n 1 --driver host $tiny --steps 2 --trace /tmp/tiny.trace
t 0 "tandem-calibrate tiny" -- /b/bin/tandem-calibrate /tmp/tiny.trace $tiny -o /tmp/tiny.pb
t 0 "tandem-sim tiny --calibration" -- /b/bin/tandem-sim $tiny --calibration /tmp/tiny.pb --trace /tmp/tp.trace
t 0 "tandem-compare tiny" -- /b/bin/tandem-compare /tmp/tp.trace /tmp/tiny.trace -o /tmp/r.html --json
t 2 "tandem-run -n 1 --driver cuda 1.3B: no CUDA device" -- \
  /b/bin/tandem-run -n 1 --driver cuda $s13 --steps 3 --set strategy.offload=optimizer
t 2 "tandem-ceilings: no CUDA device" -- /b/bin/tandem-ceilings
echo "check_bundle: $fails failure(s)"
exit $((fails > 0))
