#!/usr/bin/env bash
# Packs what scripts/device-bench.sh needs on a GPU machine that has no Rust toolchain and no network:
# stripped release binaries (splat, the atomics example, the splat-gpu test executables and the CLI's
# GPU training test) as one
# .dev/pack.tar.xz, fern (images_8, images_4) and 20 lego training views under .dev/data. `.dev/` is
# ignored through .git/info/exclude; carry it (about 42 MiB).
# Usage: scripts/device-pack.sh [DATA_DIR]   (DATA_DIR default ../shared/data)
set -euo pipefail
DATA=${1:-../shared/data}
cargo build --release --bins --examples
rm -rf .dev && mkdir -p .dev/stage/bin .dev/data/fern .dev/data/lego/train
cp target/release/splat target/release/examples/raster_backward_sums .dev/stage/bin/
{ cargo test --release -p splat-gpu --no-run --message-format=json
  cargo test --release -p splat --test gpu_train --no-run --message-format=json; } 2>/dev/null | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"].get("test"):
        shutil.copy(m["executable"], ".dev/stage/bin/test-" + m["target"]["name"])'
strip .dev/stage/bin/*
tar -cJf .dev/pack.tar.xz -C .dev/stage bin && rm -rf .dev/stage
cp -r "$DATA"/fern/{sparse,poses_bounds.npy,images_8,images_4} .dev/data/fern/
python3 - "$DATA/lego" .dev/data/lego <<'PY'
import json, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
meta = json.load(open(f"{src}/transforms_train.json"))
meta["frames"] = meta["frames"][:20]
for frame in meta["frames"]:
    shutil.copy(f"{src}/{frame['file_path'].removeprefix('./')}.png", f"{dst}/train/")
json.dump(meta, open(f"{dst}/transforms_train.json", "w"), indent=1)
PY
du -sh .dev
