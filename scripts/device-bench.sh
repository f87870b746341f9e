#!/usr/bin/env bash
# GPU numbers for BENCHMARKS.md on a machine with a real GPU and no Rust toolchain: run
# scripts/device-pack.sh first (here), carry `.dev` (and `.gl`, the Vulkan loader packages, where the
# machine lacks libvulkan), then run this there. Each step gets what is left of a deadline
# (DEADLINE_S, default 470 s), so the whole script ends in time and the logs always come back.
# Everything goes to $OUT/log.txt plus one small results.tgz (metrics, JSON benches).
set -uo pipefail
OUT=${OUT:-device-results}; mkdir -p "$OUT" /tmp/res
START=$(date +%s); DEADLINE=$((START + ${DEADLINE_S:-470}))
exec > >(tee "$OUT/log.txt") 2>&1
step() { # step NAME MAX_SECONDS COMMAND...
  local name=$1 max=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); (( left < max )) && max=$left
  if (( max < 10 )); then echo "== $name: skipped (deadline)"; return; fi
  echo "== $name (limit ${max}s) at +$(( $(date +%s) - START ))s"
  local t0=$(date +%s%N); timeout "$max" "$@" > "/tmp/res/$name.txt" 2>&1; local rc=$?
  tail -n "${TAIL:-25}" "/tmp/res/$name.txt"; echo "== $name: rc $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
if ls .gl/*.deb >/dev/null 2>&1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$ICD" ] && export VK_DRIVER_FILES=$ICD
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv || true
nproc; grep -m1 "model name" /proc/cpuinfo
tar -xJf .dev/pack.tar.xz -C .dev
# Test executables look for their sources where they were built (/work/main) and data beside it.
REPO=$PWD; mkdir -p /work/shared
[ -e /work/main ] || ln -s "$REPO" /work/main
[ -e /work/shared/data ] || ln -s "$REPO/.dev/data" /work/shared/data
B=$REPO/.dev/bin; D=$REPO/.dev/data; R=/tmp/res
step smoke 60 "$B/splat" bench "$D/fern" --images images_8 --backend gpu --steps 3 --warmup 1
# The CLI test runs the splat binary from where it was built.
mkdir -p "$REPO/target/release" && cp "$B/splat" "$REPO/target/release/splat"
for t in "$B"/test-*; do
  crate=gpu; [ "${t##*/}" = test-gpu_train ] && crate=cli
  TAIL=3 step "${t##*/}" 90 env SPLAT_REQUIRE_GPU=1 bash -c "cd $REPO/crates/$crate && $t"
done
# Same command, same bits, on this GPU.
for run in a b; do
  step "same-bits-$run" 60 "$B/splat" train "$D/fern" --images images_8 --iters 800 --backend gpu -o /tmp/bits-$run
done
cmp /tmp/bits-a/point_cloud.ply /tmp/bits-b/point_cloud.ply && echo "same-bits: point_cloud.ply identical"
[ -n "${ONLY_TESTS:-}" ] && { tar -czf "$OUT/results.tgz" -C /tmp res; exit 0; }
step fern8-gpu 60 "$B/splat" bench "$D/fern" --images images_8 --backend gpu --steps 50 --warmup 5 --json $R/fern8-gpu.json
step fern-7k-gpu 200 "$B/splat" train "$D/fern" --images images_8 --eval --iters 7000 --backend gpu -o /tmp/fern-7k
cp /tmp/fern-7k/metrics.json $R/fern-7k-metrics.json 2>/dev/null
step fern4-gpu 60 "$B/splat" bench "$D/fern" --images images_4 --backend gpu --steps 50 --warmup 5 --json $R/fern4-gpu.json
step lego20-gpu 60 "$B/splat" bench "$D/lego" --backend gpu --steps 20 --warmup 3 --json $R/lego20-gpu.json
step sums-fern8 40 "$B/raster_backward_sums" "$D/fern" images_8 20
step sums-fern4 40 "$B/raster_backward_sums" "$D/fern" images_4 20
step fern8-cpu 40 "$B/splat" bench "$D/fern" --images images_8 --backend cpu --steps 20 --warmup 3 --json $R/fern8-cpu.json
tar -czf "$OUT/results.tgz" -C /tmp res
echo "== done at +$(( $(date +%s) - START ))s"
