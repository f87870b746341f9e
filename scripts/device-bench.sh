#!/usr/bin/env bash
# GPU numbers for BENCHMARKS.md on a machine with a real GPU and no Rust toolchain: run
# scripts/device-pack.sh first (here), carry `.dev` (and `.gl`, the Vulkan loader packages, where the
# machine lacks libvulkan), then run this there. Each step gets what is left of a deadline
# (DEADLINE_S, default 470 s), so the whole script ends in time and the logs always come back; the most
# wanted numbers come first (the GPU tests, issue 38: fisheye and --pose-opt on the demo; issue 36: the
# presets on fern and lego; issue 21: fern images_8 and lego before and after, atomic sums, fern 7,000
# steps, images_4, then 10 million Gaussians).
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
  [ -e "$t" ] || continue
  crate=gpu; [ "${t##*/}" = test-gpu_train ] && crate=cli
  TAIL=3 step "${t##*/}" 90 env SPLAT_REQUIRE_GPU=1 bash -c "cd $REPO/crates/$crate && $t"
done
# Same command, same bits, on this GPU (the default deterministic backward).
for run in a b; do
  step "same-bits-$run" 60 "$B/splat" train "$D/fern" --images images_8 --preset original --iters 800 --backend gpu -o /tmp/bits-$run
done
cmp /tmp/bits-a/point_cloud.ply /tmp/bits-b/point_cloud.ply && echo "same-bits: point_cloud.ply identical"
[ -n "${ONLY_TESTS:-}" ] && { tar -czf "$OUT/results.tgz" -C /tmp res; exit 0; }
# Issue 38: the fisheye capture and pose refinement on the GPU (both run per stage: the fisheye
# validity masks and the pose corrections live on the host), beside the same runs on this CPU.
if "$B/splat" demo --help 2>/dev/null | grep -q perturbed-poses; then
  for be in gpu cpu; do
    step "fisheye-$be" 60 "$B/splat" demo --variant fisheye --backend $be -o "/tmp/fish-$be"
    step "poses-$be" 60 "$B/splat" demo --variant perturbed-poses --backend $be -o "/tmp/pp-$be"
    step "poseopt-$be" 60 "$B/splat" demo --variant perturbed-poses --pose-opt --backend $be -o "/tmp/po-$be"
    command -v python3 >/dev/null && TAIL=2 step "poseopt-$be-errors" 10 python3 "$REPO/scripts/pose-errors.py" \
      "/tmp/po-$be/images.txt" "/tmp/po-$be/dataset/true_poses.txt" --skip-equal
    for d in fish pp po; do cp "/tmp/$d-$be/metrics.json" "$R/$d-$be-metrics.json" 2>/dev/null; done
  done
fi
# Issue 38: a real capture whose poses are already good, with and without --pose-opt (fern images_8,
# balanced, on this machine's CPU cores).
if "$B/splat" train --help 2>/dev/null | grep -q -- --pose-opt; then
  for po in "" --pose-opt; do
    step "fern-poses${po}" 90 "$B/splat" train "$D/fern" --images images_8 --eval --checkpoint-every 0 \
      --backend cpu $po -o "/tmp/fern-poses${po}"
    cp "/tmp/fern-poses${po}/metrics.json" "$R/fern-poses${po}-metrics.json" 2>/dev/null
  done
fi
# Issue 36: the presets against the original at 7,000 steps, resident on the GPU (fern images_8, and
# lego at full size: all 100 training views with PACK=lego100, the 20 packed ones with PACK=main);
# metrics.json carries psnr_over_time for the table (scripts/presets-table.py on the copied folders).
if "$B/splat" train --help 2>/dev/null | grep -q -- --time-budget; then
  preset() { # preset NAME MAX_SECONDS ARGS...
    local name=$1 max=$2; shift 2
    step "$name" "$max" "$B/splat" train "$@" --eval --checkpoint-every 0 --backend gpu -o "/tmp/p/$name"
    mkdir -p "$R/presets/$name" && cp "/tmp/p/$name/metrics.json" "$R/presets/$name/" 2>/dev/null
  }
  preset fern-fast 60 "$D/fern" --images images_8 --preset fast
  preset fern-bal 90 "$D/fern" --images images_8
  preset fern-tb60 75 "$D/fern" --images images_8 --preset fast --time-budget 60s
  preset fern-orig 120 "$D/fern" --images images_8 --preset original --iters 7000
  preset lego-fast 60 "$D/lego" --preset fast
  preset lego-bal 120 "$D/lego"
  preset lego-orig 150 "$D/lego" --preset original --iters 7000
fi
# Before (splat-old: device-pack.sh's OLD_REV, 39c4759 by default) and after, alternating, same commands. The JSON of
# the new binary carries the counters, the device time per stage and the measured device peaks.
bench() { # bench NAME DATA_ARGS...
  local name=$1; shift
  for bin in splat-old splat; do
    [ -x "$B/$bin" ] || continue
    step "$name-$bin" 60 "$B/$bin" bench "$@" --backend gpu --json "$R/$name-$bin.json"
  done
}
bench fern8 "$D/fern" --images images_8 --steps 50 --warmup 5
step fern8-atomic 60 "$B/splat" bench "$D/fern" --images images_8 --backend gpu --steps 50 --warmup 5 \
  --gpu-atomic-backward --json "$R/fern8-atomic.json"
bench lego "$D/lego" --steps 20 --warmup 3
[ -d "$D/fern/images_4" ] && bench fern4 "$D/fern" --images images_4 --steps 50 --warmup 5
for bin in splat splat-old; do
  # The original schedule on both (binaries before issue 36 have no --preset and train it by default).
  P=""; "$B/$bin" train --help 2>/dev/null | grep -q -- --preset && P="--preset original"
  step "fern-7k-$bin" 120 "$B/$bin" train "$D/fern" --images images_8 $P --eval --iters 7000 --backend gpu -o "/tmp/fern-7k-$bin"
  cp "/tmp/fern-7k-$bin/metrics.json" "$R/fern-7k-$bin-metrics.json" 2>/dev/null
done
# Issue 41: a trained scene evaluated on the GPU and on the CPU must agree (its Gaussians under
# alpha_min once made the GPU's per-stage lists wrong).
for be in gpu cpu; do
  TAIL=4 step "fern-7k-eval-$be" 60 "$B/splat" eval /tmp/fern-7k-splat --backend $be
done
# Issue 41: 1 M Gaussians at lego 200 x 200, the lavapipe benchmark's case.
step scale-1m-scene 30 "$B/splat" builtin-scene --gaussians 1000000 -o /tmp/s1m.ply
for bin in splat-old splat; do
  [ -x "$B/$bin" ] || continue
  step "scale-1m-$bin" 60 "$B/$bin" bench "$D/lego" --downscale 4 --scene /tmp/s1m.ply --sh-degree 3 \
    --backend gpu --steps 10 --warmup 3 --json "$R/scale-1m-$bin.json"
done
# Scale: 10 million Gaussians (the built-in scene, SH 3) trained resident on lego's views.
step scale-10m-scene 60 "$B/splat" builtin-scene --gaussians 10000000 -o /tmp/s10m.ply
step scale-10m 150 "$B/splat" bench "$D/lego" --scene /tmp/s10m.ply --sh-degree 3 \
  --backend gpu --steps 5 --warmup 2 --json "$R/scale-10m.json"
[ -x "$B/raster_backward_sums" ] && step sums-fern8 40 "$B/raster_backward_sums" "$D/fern" images_8 20
step fern8-cpu 40 "$B/splat" bench "$D/fern" --images images_8 --backend cpu --steps 20 --warmup 3 --json $R/fern8-cpu.json
tar -czf "$OUT/results.tgz" -C /tmp res
echo "== done at +$(( $(date +%s) - START ))s"
