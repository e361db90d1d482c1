#!/usr/bin/env bash
# Build rdk's extension instrumented with AddressSanitizer + UndefinedBehaviorSanitizer into
# build/asan (never touching src/rdk/_rdkafka*.so), then run the C-helper fuzz tests
# (tests/reliability/test_fuzz_helpers.py) against it with libasan preloaded.
#
#   bash scripts/asan-test.sh                  # 200 hypothesis examples per test
#   RDK_FUZZ_EXAMPLES=1000 bash scripts/asan-test.sh [extra pytest args]
#   bash scripts/asan-test.sh --suite [tests...] # the test suite (default: unit, integration,
#                                               # reliability) against the instrumented build
#
# Any ASan report aborts the run (non-zero exit); UBSan halts on the first error too.
# In CI it runs when RDK_ASAN=1 is set (see .ci/run); it takes about a minute here.
set -euo pipefail
suite=0
if [[ ${1:-} == --suite ]]; then suite=1; shift; fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
OUT="${RDK_ASAN_BUILD:-$ROOT/build/asan}"
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

rm -rf "$OUT/tmp" "$OUT/pkg"
mkdir -p "$OUT/tmp" "$OUT/pkg/rdk"

echo "asan-test: building the instrumented extension into $OUT" >&2
(cd "$ROOT" && CFLAGS="$SAN -g" LDFLAGS="$SAN" "$PY" - "$OUT/tmp" <<'EOF'
import sys
sys.path.insert(0, ".")
import build_ffi
build_ffi.ffibuilder.compile(tmpdir=sys.argv[1], verbose=False)
EOF
) >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 1; }

# A copy of the package whose Python files are the working tree's (symlinks) and whose
# compiled module is the instrumented one; PYTHONPATH puts it ahead of the editable install.
for entry in "$ROOT"/src/rdk/*; do
    name="$(basename "$entry")"
    case "$name" in _rdkafka*.so|__pycache__|_rdkafka.c) continue ;; esac
    ln -s "$entry" "$OUT/pkg/rdk/$name"
done
cp "$OUT"/tmp/rdk/_rdkafka*.so "$OUT/pkg/rdk/"

LIBASAN="$(gcc -print-file-name=libasan.so)"
[ -e "$LIBASAN" ] || { echo "asan-test: libasan not found (apt-get install gcc)" >&2; exit 1; }

cd "$ROOT"
export LD_PRELOAD="$LIBASAN"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:check_initialization_order=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PYTHONPATH="$OUT/pkg${PYTHONPATH:+:$PYTHONPATH}"
export RDK_EXPECT_ASAN=1
export RDK_FUZZ_EXAMPLES="${RDK_FUZZ_EXAMPLES:-200}"
if ((suite)); then
    # the JVM brokers handle SIGSEGV themselves: ASan must not take that signal from them
    export ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0:allow_user_segv_handler=1"
    (($#)) || set -- tests/unit tests/integration tests/reliability
    exec "$PY" -X faulthandler -m pytest -p no:cacheprovider -q "$@"
fi
exec "$PY" -X faulthandler -m pytest -p no:cacheprovider -q \
    tests/reliability/test_fuzz_helpers.py "$@"
