#!/usr/bin/env bash
# Builds, on this (Debian 12, CUDA-toolkit) machine, everything the H200 validation needs and packs
# it into .device-bundle/ for the device tool's `carry` (docs/validation.md):
#
#   .device-bundle/bundle.tar.xz    bin/ (stripped tandem-run/-sim/-calibrate/-compare/-plan,
#                                   tandem-ceilings), lib/ (every shared library they or Open MPI
#                                   need that is not CUDA, NCCL or glibc), lib-cxx/ (libstdc++,
#                                   libgcc_s: used there only if the system's do not do),
#                                   ompi/ (mpirun, orted, MCA plugins, help files: OPAL_PREFIX),
#                                   pmix2/ (PMIx plugins and help files: PMIX_INSTALL_PREFIX),
#                                   env.sh, MANIFEST
#   .device-bundle/MANIFEST         the same MANIFEST, readable without unpacking
#
# The device machine has CUDA (cudart, cuBLAS) and NCCL (in PyTorch's venv) but none of our Debian
# packages, and no network. Compressed, because the working tree plus carried paths must stay
# under 64 MiB; validate_h200.sh unpacks it into /tmp there.
#
# Usage: exec/device/make_bundle.sh [--check]   (--check: also run the chroot self-containment
#        test, exec/device/check_bundle.sh). Env: JOBS (default nproc), BUILD (default build-device).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${BUILD:-build-device}
jobs=${JOBS:-$(nproc)}
out=.device-bundle
stage=$out/stage
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || nvcc=$(command -v nvcc) || { echo "make_bundle: no nvcc (CUDA toolkit) here" >&2; exit 2; }
cuda_root=$(cd "$(dirname "$nvcc")/.." && pwd)

echo "== configure + build ($build, Release, sm_90)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTANDEM_CUDA=ON \
  -DTANDEM_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target tandem-run tandem-sim tandem-calibrate tandem-compare tandem-plan
grep -q "TANDEM_HAVE_CUDA_DRIVER" "$build/exec/CMakeFiles/tandem_exec_host.dir/flags.make" ||
  { echo "make_bundle: $build was configured without the CUDA driver" >&2; exit 1; }

echo "== tandem-ceilings (nvcc -arch=sm_90)"
mkdir -p "$build/bin"
if [ ! "$build/bin/tandem-ceilings" -nt exec/device/ceilings.cu ]; then
  "$nvcc" -O2 -std=c++17 -arch=sm_90 exec/device/ceilings.cu -lcublas -o "$build/bin/tandem-ceilings"
fi

echo "== collect"
rm -rf "$out"
mkdir -p "$stage"/{bin,lib,lib-cxx} "$stage"/ompi/{bin,share}
bins=(tandem-run tandem-sim tandem-calibrate tandem-compare tandem-plan tandem-ceilings)
for b in "${bins[@]}"; do
  cp "$build/bin/$b" "$stage/bin/"
  strip --strip-all "$stage/bin/$b"
done

# Open MPI 4.1 (Debian layout, prefix /usr): mpirun/orted, the MCA plugins, the help files, relocated
# with OPAL_PREFIX. `tandem run` always re-executes itself under mpirun (exec/run_main.cc), and a
# worker started without mpirun (singleton) forks orted anyway, so both are needed.
ompi_lib=$(ompi_info --path libdir --parsable 2>/dev/null | sed -n 's/^path:libdir://p')
ompi_pkglib=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
ompi_pkgdata=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')
ompi_prefix=$(ompi_info --path prefix --parsable 2>/dev/null | sed -n 's/^path:prefix://p')
: "${ompi_lib:=/usr/lib/x86_64-linux-gnu/openmpi/lib}" "${ompi_pkglib:=$ompi_lib/openmpi3}"
: "${ompi_pkgdata:=/usr/share/openmpi}" "${ompi_prefix:=/usr}"
rel_pkglib=${ompi_pkglib#"$ompi_prefix"/}
rel_pkgdata=${ompi_pkgdata#"$ompi_prefix"/}
mkdir -p "$stage/ompi/$rel_pkglib" "$stage/ompi/$rel_pkgdata"
cp -L "$(command -v orterun || command -v mpirun)" "$stage/ompi/bin/mpirun"
cp -L "$(command -v orted)" "$stage/ompi/bin/orted"
cp -r "$ompi_pkgdata"/. "$stage/ompi/$rel_pkgdata/"
# Plugins whose libraries we do not carry (InfiniBand, UCX, libfabric, PSM, Slurm's PMI) are left
# out: a one-process job on one GPU uses shared memory (vader) and self.
skip_re='lib(ucp|uct|ucs|ucm|fabric|ibverbs|rdmacm|psm2|psm_infinipath|pmi|pmi2|knem|xpmem|cuda|hcoll|mxm|portals|ze_loader)\.so'
plugins=()
for p in "$ompi_pkglib"/*.so; do
  if ldd "$p" 2>/dev/null | grep -Eq "$skip_re|not found"; then continue; fi
  cp "$p" "$stage/ompi/$rel_pkglib/"
  plugins+=("$p")
done
# PMIx (external, Debian's libpmix2): its plugins and help files, relocated with PMIX_INSTALL_PREFIX.
pmix_lib=$(ldd "$ompi_pkglib"/mca_pmix_ext3x.so 2>/dev/null | awk '/libpmix/{print $3}')
pmix_extra=()
if [ -n "$pmix_lib" ]; then
  pmix_prefix=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
  [ -d "$pmix_prefix/lib/pmix" ] || pmix_prefix=$(dirname "$(dirname "$pmix_lib")")
  mkdir -p "$stage/pmix2/lib/pmix" "$stage/pmix2/share"
  for p in "$pmix_prefix"/lib/pmix/*.so; do
    [ -e "$p" ] || continue
    if ldd "$p" 2>/dev/null | grep -Eq "$skip_re|not found"; then continue; fi
    cp "$p" "$stage/pmix2/lib/pmix/"
    pmix_extra+=("$p")
  done
  for d in "$pmix_prefix/share/pmix" /usr/share/pmix; do
    [ -d "$d" ] && { cp -r "$d" "$stage/pmix2/share/"; break; }
  done
fi

# Every library those executables and plugins need, except the C runtime (the device machine's
# glibc is at least as new: Ubuntu 24.04 there, Debian 12 here), CUDA and NCCL (the device
# machine's own toolkit and PyTorch's venv provide them, matching its driver).
is_system() {
  case "$1" in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libnccl.so*|libnvidia-*|libnvJitLink*) return 0 ;;
  esac
  return 1
}
declare -A seen
collect() {
  local f line name path
  for f in "$@"; do
    while read -r line; do
      name=$(awk '{print $1}' <<<"$line")
      path=$(awk '/=>/{print $3}' <<<"$line")
      [ -n "$path" ] && [ "$path" != "not" ] || continue
      is_system "$name" && continue
      [ -n "${seen[$name]:-}" ] && continue
      seen[$name]=1
      case "$name" in
        libstdc++.so*|libgcc_s.so*) cp -L "$path" "$stage/lib-cxx/$name" ;;
        *) cp -L "$path" "$stage/lib/$name"; collect "$path" ;;
      esac
    done < <(ldd "$f" 2>/dev/null | grep '=>')
  done
}
collect "$build"/bin/tandem-{run,sim,calibrate,compare,plan,ceilings} "$stage/ompi/bin/mpirun" \
  "$stage/ompi/bin/orted" "${plugins[@]}" "${pmix_extra[@]}"
# Shared libraries need only their dynamic symbols.
strip --strip-unneeded "$stage"/lib/*.so* "$stage"/lib-cxx/*.so* "$stage/ompi/$rel_pkglib"/*.so 2>/dev/null || true
strip --strip-all "$stage/ompi/bin"/* 2>/dev/null || true

# env.sh: sourced there with B set to the unpacked bundle.
cat >"$stage/env.sh" <<EOF
# Sourced by exec/device/validate_h200.sh with B = the unpacked bundle (written by make_bundle.sh).
export OPAL_PREFIX="\$B/ompi"
export PMIX_INSTALL_PREFIX="\$B/pmix2"
export PATH="\$B/bin:\$B/ompi/bin:\$PATH"
# A one-host job: no ssh/rsh agent, shared memory + self; the rest of /etc/openmpi's defaults.
export OMPI_MCA_plm=isolated
export OMPI_MCA_plm_rsh_agent=
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl=self,vader
export OMPI_MCA_mtl=^ofi
export OMPI_MCA_osc=^ucx,pt2pt
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_mca_base_component_path="\$B/ompi/$rel_pkglib"
export OMPI_MCA_opal_warn_on_missing_libcuda=0
export PMIX_MCA_mca_base_component_path="\$B/pmix2/lib/pmix"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF

{
  echo "tandem device bundle"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "nvcc: $("$nvcc" --version | tail -1)  arch: sm_90  cuda_root here: $cuda_root"
  echo "glibc needed: $(for f in "$stage"/bin/* "$stage"/lib/*; do objdump -T "$f" 2>/dev/null; done |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  echo "GLIBCXX needed: $(for f in "$stage"/bin/* "$stage"/lib/*; do objdump -T "$f" 2>/dev/null; done |
    grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)"
  echo "cuda/nccl sonames needed there: $(for f in "$stage"/bin/*; do objdump -p "$f" | awk '/NEEDED/{print $2}'; done |
    grep -E 'cuda|cublas|nccl' | sort -u | tr '\n' ' ')"
  echo "ompi: OPAL_PREFIX=\$B/ompi, plugins in \$B/ompi/$rel_pkglib ($(ls "$stage/ompi/$rel_pkglib" | wc -l))"
  echo "files:"
  (cd "$stage" && find . -type f -printf '%s %p\n' | sort -k2)
} >"$stage/MANIFEST"
cp "$stage/MANIFEST" "$out/MANIFEST"

echo "== pack"
tar -C "$stage" -cf - . | xz -T0 -6 >"$out/bundle.tar.xz"
raw=$(du -sb "$stage" | cut -f1)
rm -rf "$stage"
packed=$(stat -c %s "$out/bundle.tar.xz")
awk -v f="$out/bundle.tar.xz" -v p="$packed" -v r="$raw" \
  'BEGIN { printf "bundle: %s (%.1f MiB packed, %.1f MiB unpacked)\n", f, p / 1048576, r / 1048576 }'
if [ "$packed" -gt $((50 << 20)) ]; then
  echo "make_bundle: the bundle is over 50 MiB; the device tool carries 64 MiB with the tree" >&2
  exit 1
fi
[ "${1:-}" = "--check" ] && exec "$root/exec/device/check_bundle.sh"
exit 0
