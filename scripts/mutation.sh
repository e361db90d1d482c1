#!/usr/bin/env bash
# Mutation testing (issue 31 part 2): mutmut 3 over rdk's pure-Python core, each module with
# the fast unit tests that cover it. Prints the score per module and keeps the run's
# directory (surviving mutants: `cd <dir> && mutmut show <name>`).
#
#   scripts/mutation.sh                  # every module below
#   scripts/mutation.sh slots tracker    # some of them
#
# It runs in a copy of the tree (src/, tests/, pyproject.toml) whose pyproject.toml gets a
# [tool.mutmut] table, so the repository's own files are never touched. Record the scores,
# with the date, in tests/MUTATION.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
JOBS=${MUTMUT_JOBS:-2}
"$PY" -c "import mutmut" 2>/dev/null || { echo "mutmut is missing: $PY -m pip install mutmut" >&2; exit 2; }

# module name -> "source file (or mutmut glob) | unit tests that cover it"
declare -A MODULES=(
  [slots]="src/rdk/slots.py|tests/unit/test_slots.py tests/unit/test_slots_exact.py"
  [tracker]="src/rdk/consumer/_tracker.py|tests/unit/test_tracker.py"
  # offsets: not test_offsets_crash.py (it SIGKILLs writer subprocesses at random moments for
  # ~20 s; a mutant in this process is not what they run): with it the run passed 25 minutes.
  # A package: every module of src/rdk/offsets/ (format, files, locks, stores, committer)
  [offsets]="src/rdk/offsets/*|tests/unit/test_offsets.py tests/unit/test_partition_locks.py tests/unit/test_offsets_exact.py"
  [layout]="src/rdk/producer/_layout.py|tests/unit/test_producer_unit.py tests/unit/test_layout_exact.py"
  [accounting]="src/rdk/producer/_accounting.py|tests/unit/test_producer_unit.py tests/unit/test_accounting_exact.py"
  [planner]="src/rdk/spark/planner.py|tests/unit/test_planner_exact.py tests/spark/test_ranges.py"
)
ORDER=(slots tracker offsets layout accounting planner)
[ $# -gt 0 ] && ORDER=("$@")

RUN=$(mktemp -d /tmp/rdk-mutation.XXXXXX)
echo "mutation runs in $RUN (kept)"
printf '%-12s %-34s %7s %7s %9s %7s %7s\n' module file mutants killed survived other score

for name in "${ORDER[@]}"; do
  spec=${MODULES[$name]:?"unknown module $name (one of: ${!MODULES[*]})"}
  src=${spec%%|*}
  tests=${spec#*|}
  dir=$RUN/$name
  mkdir -p "$dir"
  cp -a "$ROOT/src" "$ROOT/tests" "$ROOT/pyproject.toml" "$dir/"
  find "$dir" -name __pycache__ -prune -exec rm -rf {} +
  {
    echo
    echo "[tool.mutmut]"
    echo 'source_paths = ["src/"]'
    echo "only_mutate = [\"$src\"]"
    printf 'pytest_add_cli_args_test_selection = ['
    sep=""; for t in $tests; do printf '%s"%s"' "$sep" "$t"; sep=", "; done
    echo ']'
    echo 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]'
  } >> "$dir/pyproject.toml"
  (cd "$dir" && "$PY" -m mutmut run --max-children "$JOBS" > run.log 2>&1) || {
    echo "$name: mutmut failed, see $dir/run.log" >&2; continue; }
  (cd "$dir" && "$PY" -m mutmut results --all true > results.txt 2>&1) || true
  "$PY" - "$name" "$src" "$dir/results.txt" <<'PY'
import collections, re, sys
name, src, path = sys.argv[1:]
status = collections.Counter()
for line in open(path):
    m = re.match(r"\s*(\S+__mutmut_\d+): (.+)$", line)
    if m:
        status[m.group(2).strip()] += 1
total = sum(status.values())
killed = status["killed"] + status["timeout"]
survived = status["survived"]
other = total - killed - survived
score = f"{100 * killed / total:.1f}%" if total else "-"
print(f"{name:<12} {src:<34} {total:7} {killed:7} {survived:9} {other:7} {score:>7}")
if other:
    print("   other:", dict((k, v) for k, v in status.items() if k not in ("killed", "timeout", "survived")))
PY
done
