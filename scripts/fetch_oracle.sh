#!/usr/bin/env bash
# Install the test oracle, ONNX Runtime 1.30 (npm onnxruntime-node), into the
# git-ignored tests/oracle/node_modules. --ignore-scripts: its install script
# tries to download CUDA files, which fails offline and is not needed on CPU.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/tests/oracle"
want=1.30.0
have=$(node -p "require('$dir/node_modules/onnxruntime-node/package.json').version" 2>/dev/null || true)
[ "$have" = "$want" ] && exit 0
echo "fetch_oracle: npm install onnxruntime-node@$want" >&2
if ! (cd "$dir" && npm install --silent --no-save --no-audit --no-fund --ignore-scripts "onnxruntime-node@$want" >/tmp/lector-npm.log 2>&1); then
  echo "fetch_oracle: cannot install onnxruntime-node@$want from the npm registry; see /tmp/lector-npm.log" >&2
  exit 1
fi
