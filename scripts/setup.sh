#!/usr/bin/env bash
# Everything rdk needs on a fresh Debian bookworm machine (root, Python 3.11), idempotently:
# Debian packages, the pinned librdkafka in .deps/, a virtual environment in .venv with
# rdk installed editable plus its test, spark and bench extras.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential pkg-config python3-venv python3-dev libssl-dev zlib1g-dev libzstd-dev
          liblz4-dev stunnel4 openssl procps)
command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then echo "setup: please install: ${missing[*]}" >&2; exit 1; fi
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

scripts/build-librdkafka.sh

python=${PYTHON:-python3}
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
stamp=.venv/.rdk-installed
inputs=(pyproject.toml setup.py build_ffi.py include/*.h src/rdk/*.c .deps/librdkafka/.rdk-build-*)
stale=0
[[ -f $stamp ]] || stale=1
for f in "${inputs[@]}"; do [[ $f -nt $stamp ]] && stale=1; done
if ((stale)); then
  .venv/bin/python -m pip install -q --upgrade pip setuptools wheel "cffi>=1.17"
  .venv/bin/python -m pip install -q --no-build-isolation -e ".[test,spark,bench]"
  touch "$stamp"
fi
.venv/bin/python -c 'import rdk; print("setup: rdk", rdk.__version__, "with librdkafka", rdk.librdkafka_version())'
