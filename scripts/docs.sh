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
    # not --quiet: in quiet mode mkdocs drops warnings before --strict counts them
    log=$(mktemp); trap 'rm -f "$log"' EXIT
    if ! "$py" -m mkdocs build --strict --site-dir "${2:-site}" >"$log" 2>&1; then
      grep -v '^INFO' "$log" >&2; echo "docs: the strict build failed" >&2; exit 1
    fi
    grep -v '^INFO' "$log" >&2 || true
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
