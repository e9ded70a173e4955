#!/usr/bin/env bash
# Install the Kubernetes manifest validator of the tests into the git-ignored
# tests/k8s/node_modules: npm kubernetes-models 4.5.1 (Kubernetes' published
# OpenAPI document as compiled JSON-schema validators and TypeScript
# interfaces), typescript 5.6.3 (the strict check) and yaml 2.8.1.
# `npm ci` installs exactly tests/k8s/package-lock.json: every package pinned
# by version and checked against the lockfile's sha512 integrity. Nothing is
# fetched when the tests run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/tests/k8s"
have=$(node -p "['kubernetes-models','typescript','yaml'].map(p => require('$dir/node_modules/' + p + '/package.json').version).join(' ')" 2>/dev/null || true)
[ "$have" = "4.5.1 5.6.3 2.8.1" ] && exit 0
echo "fetch_manifest_validator: npm ci in tests/k8s (kubernetes-models 4.5.1)" >&2
if ! (cd "$dir" && npm ci --silent --no-audit --no-fund --ignore-scripts >/tmp/lector-npm-k8s.log 2>&1); then
  echo "fetch_manifest_validator: npm ci failed; see /tmp/lector-npm-k8s.log" >&2
  exit 1
fi
