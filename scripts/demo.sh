#!/usr/bin/env bash
# Lector's main job: OCR of the sample image committed in samples/ (set-up
# and build included). Arguments, if any, replace the default and go to
# lector as they are, e.g.  scripts/demo.sh --format json samples/sample.jpg
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
[ $# -gt 0 ] || set -- samples/sample.jpg
exec build/lector --models models "$@"
