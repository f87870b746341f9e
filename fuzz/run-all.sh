#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) one after another, starting from the committed
# seeds, and prints the executions and findings of each. Needs nightly and cargo-fuzz:
#   cargo install cargo-fuzz && fuzz/run-all.sh 600
set -uo pipefail
cd "$(dirname "$0")"
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(ply colmap_cameras_bin colmap_images_bin colmap_points_bin \
  colmap_cameras_txt colmap_images_txt colmap_points_txt transforms_json poses_bounds_npy image \
  compressed_ply splat spz sog glb gltf)
mkdir -p logs
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null
  cargo +nightly fuzz run -O "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=16384 \
    -rss_limit_mb=2048 -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"logs/$t.log" 2>&1
  rc=$?
  runs=$(grep -a -o 'Done [0-9]* runs' "logs/$t.log" | tail -1)
  echo "$t: exit $rc, ${runs:-no final stats}, corpus $(ls "corpus/$t" | wc -l), artifacts $(ls "artifacts/$t" | wc -l)"
done
