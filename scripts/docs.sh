#!/usr/bin/env bash
# The documentation site (MkDocs + Material + mkdocstrings; docs/, mkdocs.yml).
#   scripts/docs.sh build   plots from the benchmark result files, then a strict build into site/
#                           (a broken link, an unresolved reference or a bad docstring fails it)
#   scripts/docs.sh serve   the same, then serve it with live reload on http://127.0.0.1:8000
# Run scripts/setup.sh once first (it installs the docs extra into .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_MKDOCS_2_WARNING=1
py=.venv/bin/python
case "${1:-build}" in
  build)
    "$py" scripts/plots.py
    "$py" -m mkdocs build --strict --quiet --site-dir "${2:-site}"
    echo "docs: built into ${2:-site}/"
    ;;
  serve)
    "$py" scripts/plots.py
    exec "$py" -m mkdocs serve --strict --dev-addr "127.0.0.1:${2:-8000}"
    ;;
  *)
    echo "usage: scripts/docs.sh build [SITE_DIR] | serve [PORT]" >&2
    exit 2
    ;;
esac
