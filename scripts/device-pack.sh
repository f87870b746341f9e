#!/usr/bin/env bash
# Packs what scripts/device-bench.sh needs on a GPU machine that has no Rust toolchain and no network,
# under .dev/ (ignored by .gitignore; carry it: the device tool carries at most 64 MiB).
#   PACK=main (default): stripped release binaries (splat, the atomics example, the splat-gpu test
#     executables and the CLI's GPU training test), fern (images_8, images_4) and 20 lego training views.
#   PACK=lego100: splat only, fern images_8 and all 100 lego training views (the issue's lego run; does
#     not fit beside fern images_4 and the tests).
# Both also pack `splat-old`, the binary of OLD_REV (default 39c4759, issue 41's baseline; e23bce2 was
# issue 21's),
# so one device run gives the before and after of the same commands (OLD_REV=none: no old binary).
# Usage: [PACK=..] [OLD_REV=..] scripts/device-pack.sh [DATA_DIR]   (DATA_DIR default ../shared/data)
set -euo pipefail
DATA=${1:-../shared/data}
PACK=${PACK:-main}
OLD_REV=${OLD_REV:-39c4759}
cargo build --release --bins --examples
rm -rf .dev && mkdir -p .dev/stage/bin .dev/data/fern .dev/data/lego/train
cp target/release/splat .dev/stage/bin/
# The old binary, built in a worktree with its own target folder (kept for the next pack); OLD_REV=none
# packs none (the bench then runs the new binary alone).
OLD_TREE=${OLD_TREE:-../splat-old-tree}
if [ "$OLD_REV" != none ]; then
  if [ ! -d "$OLD_TREE" ]; then git worktree add --detach "$OLD_TREE" "$OLD_REV"; fi
  git -C "$OLD_TREE" checkout --quiet --detach "$OLD_REV"
  (cd "$OLD_TREE" && cargo build --release --bin splat)
  cp "$OLD_TREE/target/release/splat" .dev/stage/bin/splat-old
fi
if [ "$PACK" = main ]; then
  cp target/release/examples/raster_backward_sums .dev/stage/bin/
  { cargo test --release -p splat-gpu --no-run --message-format=json
    cargo test --release -p splat --test gpu_train --no-run --message-format=json; } 2>/dev/null | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"].get("test"):
        shutil.copy(m["executable"], ".dev/stage/bin/test-" + m["target"]["name"])'
fi
strip .dev/stage/bin/*
tar -cJf .dev/pack.tar.xz -C .dev/stage bin && rm -rf .dev/stage
cp -r "$DATA"/fern/{sparse,poses_bounds.npy,images_8} .dev/data/fern/
VIEWS=20
if [ "$PACK" = main ]; then cp -r "$DATA"/fern/images_4 .dev/data/fern/; else VIEWS=100; fi
python3 - "$DATA/lego" .dev/data/lego "$VIEWS" <<'PY'
import json, shutil, sys
src, dst, views = sys.argv[1], sys.argv[2], int(sys.argv[3])
meta = json.load(open(f"{src}/transforms_train.json"))
meta["frames"] = meta["frames"][:views]
for frame in meta["frames"]:
    shutil.copy(f"{src}/{frame['file_path'].removeprefix('./')}.png", f"{dst}/train/")
json.dump(meta, open(f"{dst}/transforms_train.json", "w"), indent=1)
PY
du -sh .dev
if [ "$(du -sb .dev | cut -f1)" -gt $((63 << 20)) ]; then
  echo "warning: .dev is over 63 MiB; the device tool carries at most 64 MiB" >&2
fi
