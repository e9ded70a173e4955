#!/usr/bin/env bash
# Install the Kubernetes manifest validator of the tests (npm kubernetes-models
# 4.5.1: the schemas of Kubernetes' published OpenAPI document, compiled to
# validators, and yaml 2.8.1) into the git-ignored tests/k8s/node_modules.
# `npm ci` installs exactly tests/k8s/package-lock.json: every package pinned
# by version and checked against the lockfile's sha512 integrity. Nothing is
# fetched when the tests run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir="$top/tests/k8s"
have=$(node -p "require('$dir/node_modules/kubernetes-models/package.json').version" 2>/dev/null || true)
[ "$have" = 4.5.1 ] && exit 0
echo "fetch_manifest_validator: npm ci in tests/k8s (kubernetes-models 4.5.1)" >&2
if ! (cd "$dir" && npm ci --silent --no-audit --no-fund --ignore-scripts >/tmp/lector-npm-k8s.log 2>&1); then
  echo "fetch_manifest_validator: npm ci failed; see /tmp/lector-npm-k8s.log" >&2
  exit 1
fi
