#!/usr/bin/env bash
# Fetches the viewer's browser libraries from the npm registry by exact version, checks each tarball
# against the integrity hash pinned here (the registry's sha512), and copies the files the page loads
# into crates/viewer/assets/vendor/ with each package's LICENSE. Writes vendor/SHA256SUMS, which
# crates/viewer/tests/vendor.rs checks against the files embedded in the binary.
#
# The files are committed: building splat never fetches anything, and the viewer never loads anything
# from outside its own server. Run this only to change a version (then update the pins below, NOTES.md
# and docs/viewer.md). Needs curl, tar, sha256sum, base64 and openssl (or sha512sum).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=crates/viewer/assets/vendor
registry=${NPM_REGISTRY:-https://registry.npmjs.org}

# package  version  sha512 integrity (npm view PKG@VERSION dist.integrity)
pins=(
  "@sparkjsdev/spark 2.2.0 sha512-wf5F2YAmPXnjm20/MgXYer9FQTXz2JOCo05HwxFkaD7Guk9rHVPIwdJ6fq0oF9ME0heMvYj+TxS6DTrucvy6KA=="
  "three 0.187.0 sha512-Qiu7R+Cmh8CstZsY1uJOSWnVlfo7ZtNLV7mF8Jltk3LB3AtDu9cRZlcnRKkAk8Y4z6KKw35z7Y7Urd7jWY8etA=="
)
# package  file in the tarball  name under vendor/
files=(
  "@sparkjsdev/spark package/dist/spark.module.min.js spark/spark.module.min.js"
  "@sparkjsdev/spark package/LICENSE spark/LICENSE"
  "three package/build/three.module.js three/three.module.js"
  "three package/build/three.core.js three/three.core.js"
  "three package/examples/jsm/postprocessing/Pass.js three/addons/postprocessing/Pass.js"
  "three package/LICENSE three/LICENSE"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for pin in "${pins[@]}"; do
  read -r pkg version integrity <<<"$pin"
  base=${pkg##*/}
  url="$registry/$pkg/-/$base-$version.tgz"
  tgz="$work/$base.tgz"
  echo "fetching $url" >&2
  curl -sSfL --retry 3 -o "$tgz" "$url"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "integrity mismatch for $pkg@$version: expected $integrity, got $got" >&2
    exit 1
  fi
  mkdir -p "$work/$base"
  tar -xzf "$tgz" -C "$work/$base"
done

rm -rf "$dest"
for f in "${files[@]}"; do
  read -r pkg inner name <<<"$f"
  base=${pkg##*/}
  mkdir -p "$(dirname "$dest/$name")"
  cp "$work/$base/$inner" "$dest/$name"
done
{
  for pin in "${pins[@]}"; do
    read -r pkg version _ <<<"$pin"
    echo "# $pkg $version"
  done
  (cd "$dest" && find . -type f ! -name "SHA256SUMS*" | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum)
} >"$dest/SHA256SUMS.tmp"
mv "$dest/SHA256SUMS.tmp" "$dest/SHA256SUMS"
cat "$dest/SHA256SUMS"
