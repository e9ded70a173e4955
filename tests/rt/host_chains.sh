#!/bin/sh
# The host executor's chains of elementwise nodes against the same nodes run
# one by one (LECTOR_HOST_CHAINS=0): the same bytes out (test_host_chains.c).
# usage: host_chains.sh TEST_BINARY MODELS_DIR WORK_DIR
set -eu
bin=$1 models=$2 work=$3
mkdir -p "$work"
LECTOR_LOG=debug "$bin" "$models" "$work/chains.bin" 2>"$work/chains.log"
if ! grep -Eq "elementwise nodes run in [0-9]+ chains" "$work/chains.log"; then
  echo "FAIL: no chain was formed (LECTOR_LOG=debug output in $work/chains.log)"
  exit 1
fi
LECTOR_LOG=debug LECTOR_HOST_CHAINS=0 "$bin" "$models" "$work/nodes.bin" 2>"$work/nodes.log"
if grep -Eq "elementwise nodes run in [0-9]+ chains" "$work/nodes.log"; then
  echo "FAIL: LECTOR_HOST_CHAINS=0 still formed chains"
  exit 1
fi
if ! cmp "$work/chains.bin" "$work/nodes.bin"; then
  echo "FAIL: the chains' outputs differ from the nodes run one by one"
  exit 1
fi
echo "ok: $(grep -Ec "elementwise nodes run in" "$work/chains.log") plans with chains, outputs identical ($(wc -c <"$work/chains.bin") bytes)"
