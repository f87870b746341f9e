#!/usr/bin/env bash
# GPU numbers for BENCHMARKS.md on a machine with a real GPU (issue 7): builds, checks the GPU suite on the
# device, then fern and lego benchmarks (per stage and resident blocks), the atomics-vs-records comparison
# and two resident training runs. Results go to $OUT (default ./device-results).
# Usage: scripts/device-bench.sh [DATA_DIR]   (DATA_DIR default ../shared/data)
set -euo pipefail
DATA=${1:-../shared/data}
OUT=${OUT:-device-results}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
command -v nvidia-smi >/dev/null && nvidia-smi > "$OUT/nvidia-smi.txt" || true
cargo build --release --bins --examples 2>&1 | tail -3
SPLAT_REQUIRE_GPU=1 cargo test --release -p splat-gpu 2>&1 | grep -E "test result|FAILED|GPU:" | sort | uniq -c > "$OUT/gpu-tests.txt"
S=./target/release/splat
$S bench "$DATA/fern" --images images_8 --backend gpu --steps 50 --warmup 5 --json "$OUT/fern8-gpu.json" > "$OUT/fern8-gpu.txt" 2>&1
$S bench "$DATA/fern" --images images_4 --backend gpu --steps 50 --warmup 5 --json "$OUT/fern4-gpu.json" > "$OUT/fern4-gpu.txt" 2>&1
$S bench "$DATA/lego" --backend gpu --steps 50 --warmup 5 --json "$OUT/lego-gpu.json" > "$OUT/lego-gpu.txt" 2>&1
./target/release/examples/raster_backward_sums "$DATA/fern" images_8 20 > "$OUT/sums-fern8.txt" 2>&1
./target/release/examples/raster_backward_sums "$DATA/fern" images_4 20 > "$OUT/sums-fern4.txt" 2>&1
( time $S train "$DATA/fern" --images images_8 --eval --iters 7000 --backend gpu -o "$OUT/fern-7k" ) > "$OUT/fern-7k.txt" 2>&1
( time $S train "$DATA/lego" --eval --iters 7000 --backend gpu -o "$OUT/lego-7k" ) > "$OUT/lego-7k.txt" 2>&1
tail -n 3 "$OUT"/*.txt
