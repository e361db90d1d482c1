#!/usr/bin/env bash
# Build the pinned librdkafka into a project-local prefix (default: .deps/librdkafka).
#
#   scripts/build-librdkafka.sh                 # source from npm: @confluentinc/kafka-javascript@1.10.1 ships librdkafka 2.15.1
#   scripts/build-librdkafka.sh PATH_OR_URL     # an official librdkafka-2.15.1 release tarball instead
#
# Idempotent: if the prefix already holds librdkafka 2.15.1 built by this script, it does nothing.
# Installs the Debian -dev packages it needs when they are missing and it runs as root.
set -euo pipefail

LIBRDKAFKA_VERSION=2.15.1
NPM_PACKAGE=@confluentinc/kafka-javascript@1.10.1
# rdk's fixes to librdkafka (scripts/patches/librdkafka/*.patch, applied in order); bump the
# level when they change so every prefix is rebuilt
RDK_PATCH_LEVEL=6
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${RDK_LIBRDKAFKA_PREFIX:-$here/.deps/librdkafka}
source_arg=${1:-}
stamp=$prefix/.rdk-build-$LIBRDKAFKA_VERSION-p$RDK_PATCH_LEVEL

if [[ -f $stamp && -f $prefix/lib/librdkafka.a ]]; then
  echo "librdkafka $LIBRDKAFKA_VERSION already built in $prefix"
  exit 0
fi

debian_packages=(build-essential patch pkg-config python3 libssl-dev zlib1g-dev libzstd-dev liblz4-dev)
if command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [[ $(id -u) == 0 ]]; then
      echo "installing Debian packages: ${missing[*]}"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      echo "missing Debian packages (run as root or install them): ${missing[*]}" >&2
      exit 1
    fi
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if [[ -z $source_arg ]]; then
  echo "fetching librdkafka $LIBRDKAFKA_VERSION source from npm ($NPM_PACKAGE)"
  tarball=$(npm pack --silent "$NPM_PACKAGE" | tail -1)
  tar xzf "$tarball"
  src=$work/package/deps/librdkafka
else
  if [[ $source_arg =~ ^https?:// ]]; then
    curl -fsSL -o librdkafka.tar.gz "$source_arg"
    source_arg=$work/librdkafka.tar.gz
  fi
  mkdir src && tar xzf "$source_arg" -C src --strip-components=1
  src=$work/src
fi

found=$(grep -E '^#define RD_KAFKA_VERSION ' "$src/src/rdkafka.h" | awk '{print $3}')
if [[ $found != 0x020f01ff ]]; then
  echo "expected librdkafka $LIBRDKAFKA_VERSION (0x020f01ff), source has $found" >&2
  exit 1
fi

for patch_file in "$here"/scripts/patches/librdkafka/*.patch; do
  [[ -f $patch_file ]] || continue
  echo "applying $(basename "$patch_file")"
  patch -s -p1 -d "$src" <"$patch_file"
done

cd "$src"
# -fPIC so the static archive can be linked into the Python extension module.
CFLAGS="-O2 -fPIC" ./configure --prefix="$prefix" \
  --enable-ssl --enable-zlib --enable-zstd --disable-lz4-ext \
  --disable-gssapi --disable-curl >"$work/configure.log" 2>&1 \
  || { tail -40 "$work/configure.log" >&2; exit 1; }
make -C src -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
rm -rf "$prefix"
make -C src install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }
install -m 0644 LICENSE LICENSES.txt "$prefix/"
touch "$stamp"
echo "librdkafka $LIBRDKAFKA_VERSION (rdk patch level $RDK_PATCH_LEVEL) installed in $prefix"
grep -E 'WITH_(SSL|ZLIB|ZSTD|SNAPPY|SASL_SCRAM|LZ4_EXT)' src/../config.h || true
