#!/usr/bin/env bash
# The sources keep two rules of the debug facility (docs/DEBUG.md):
# 1. LECTOR_* variables are read in one place: the test controls in
#    src/util/testctl.c (its list in testctl.h), LECTOR_LOG in src/util/log.c,
#    and the deployment and doctor variables docs/DEBUG.md names; each test
#    control is documented in docs/DEBUG.md and each one documented exists.
# 2. Host memory in rt, the backends (the CUDA module included), ocr, image
#    and serve comes from the fault-injectable allocator (src/util/util.c).
# 3. Layers point down (docs/CODE_STYLE.md): each folder includes the
#    internal headers of the folders below it only; the CLI and the service
#    the public headers and src/util only.
#   check_sources.sh SOURCE_DIR
set -u
cd "$1" || exit 2
fail=0
ko() { echo "FAIL: $*"; fail=1; }

# 1. readers
allowed='LECTOR_LOG|LECTOR_MODELS|LECTOR_CUDA_MODULE|LECTOR_CUDA_LIBS|LECTOR_DOCTOR_NVML|LECTOR_DOCTOR_LIBCUDA'
bad=$(grep -rnoE 'getenv\("LECTOR_[A-Z0-9_]*"\)' src | grep -vE "\"($allowed)\"")
[ -z "$bad" ] || ko "LECTOR_* read outside the test controls: $bad"
listed=$(grep -oE '^ *X\(LECTOR__TC_[A-Z0-9_]+, +"LECTOR_[A-Z0-9_]+"' src/util/testctl.h | grep -oE '"LECTOR_[A-Z0-9_]+"' | tr -d '"' | sort)
[ "$(echo "$listed" | wc -l)" -ge 20 ] || ko "testctl.h lists $(echo "$listed" | wc -l) controls: the list was not parsed"
documented=$(sed -n '/^## Test controls/,/^## /p' docs/DEBUG.md | grep -oE '^\| `LECTOR_[A-Z0-9_]+' | tr -d '|` ' | sort)
missing=$(comm -23 <(echo "$listed") <(echo "$documented"))
extra=$(comm -13 <(echo "$listed") <(echo "$documented"))
[ -z "$missing" ] || ko "test controls not in docs/DEBUG.md: $missing"
[ -z "$extra" ] || ko "docs/DEBUG.md documents test controls that do not exist: $extra"
for v in LECTOR_LOG LECTOR_MODELS LECTOR_CUDA_MODULE LECTOR_CUDA_LIBS LECTOR_DOCTOR_NVML LECTOR_DOCTOR_LIBCUDA; do
    grep -q "\`$v\`" docs/DEBUG.md || ko "$v is not documented in docs/DEBUG.md"
done

# 2. allocation
raw=$(grep -rnP '(?<![\w>.])(malloc|calloc|realloc|free|strdup|strndup|posix_memalign|aligned_alloc)\(' \
      src/rt src/backend src/ocr src/image src/serve src/util --include='*.c' --include='*.h' --include='*.cu' |
      grep -v '^src/util/util.c:')
[ -z "$raw" ] || ko "host allocation outside the fault-injectable allocator:
$raw"

# 3. includes: folder -> the internal folders it may include (besides its own
#    headers and include/); src/gpuenv is the doctor's and not checked here
while read -r dir may; do
    bad=$(grep -rnoE '#include "[a-z_]+/' "$dir" | grep -vE "\"($may)/$")
    [ -z "$bad" ] || ko "$dir includes what lies above it or beside it: $bad"
done <<'RULES'
src/util util
src/rt rt|util|gpuenv
src/backend backend|rt|util
src/image image|util
src/ocr ocr|image|util
src/serve util
tools/lector util|batch
RULES

[ $fail = 0 ] && echo "debug.sources: ok"
exit $fail
