#!/usr/bin/env bash
# Lector's main job on the sample image committed in samples/ (set-up and
# build included): scripts/demo.sh [IMAGE]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
exec build/lector models --models models --image "${1:-samples/sample.jpg}"
