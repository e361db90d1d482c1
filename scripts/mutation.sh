#!/usr/bin/env bash
# Mutation testing (issue 31 part 2): mutmut 3 over rdk's pure-Python core, each module with
# the fast unit tests that cover it. Prints the score per module and keeps the run's
# directory (surviving mutants: `cd <dir> && mutmut show <name>`).
#
#   scripts/mutation.sh                  # every module below
#   scripts/mutation.sh slots tracker    # some of them
#   MUTATION_NAMES="rdk.aio._producer.xǁProducerǁstop__mutmut_*" scripts/mutation.sh aio
#                                        # only these mutants (replaces the entry's third field)
#
# It runs in a copy of the tree (src/, tests/, pyproject.toml) whose pyproject.toml gets a
# [tool.mutmut] table, so the repository's own files are never touched. Record the scores,
# with the date, in tests/MUTATION.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
JOBS=${MUTMUT_JOBS:-2}
"$PY" -c "import mutmut" 2>/dev/null || { echo "mutmut is missing: $PY -m pip install mutmut" >&2; exit 2; }

# module name -> "source file(s) (or mutmut globs) | unit tests that cover it [| mutant names]"
# The optional third field limits the run to the mutants of the functions named (mutmut's
# fnmatch patterns on mutant names, e.g. "rdk.share._thread.xǁShareThreadǁ_one_batch__mutmut_*"):
# the score then counts only those mutants.
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
  # issue 41: the share consumer's acknowledgements (ShareBatch's settling, the share thread's
  # delivery, acknowledgement and counts), the consumer's settle path (tracker, progress,
  # Batch.commit), worker supervision, rdk.aio
  [share_ack]="src/rdk/share/_messages.py src/rdk/share/_thread.py|tests/unit/test_share_messages.py tests/unit/test_share_ack.py|rdk.share._messages.xǁShareBatchǁ* rdk.share._thread.xǁShareThreadǁ_one_batch__* rdk.share._thread.xǁShareThreadǁ_deliver__* rdk.share._thread.xǁShareThreadǁ_wait_future__* rdk.share._thread.xǁShareThreadǁ_handoff_put__* rdk.share._thread.xǁShareThreadǁack_failed__* rdk.share._thread.xǁShareThreadǁserve_collected__* rdk.share._thread.xǁShareCountsǁ*"
  [settle]="src/rdk/consumer/_tracker.py src/rdk/consumer/_progress.py src/rdk/consumer/_batch.py|tests/unit/test_tracker.py tests/unit/test_progress.py|rdk.consumer._tracker.* rdk.consumer._progress.xǁProgressǁ* rdk.consumer._progress.xǁTopicStoresǁ* rdk.consumer._batch.xǁBatchǁcommit__* rdk.consumer._batch.xǁBatchǁcommit_through__*"
  [supervision]="src/rdk/workers/_supervision.py|tests/unit/test_worker_supervision.py"
  # aio: every module of src/rdk/aio/ (the event thread's work of _event_work.py included) with
  # the unit tests, tests/integration/test_aio_waits.py (librdkafka's mock cluster) and the
  # mock-cluster tests of test_aio_{producer,consumer}.py ([mock] of those run on every broker
  # kind; no broker process). ShareConsumer._next is left out (share groups need Apache Kafka,
  # which tests/integration/test_share_consumer.py runs).
  [aio]="src/rdk/aio/*|tests/unit/test_aio_unit.py tests/unit/test_aio_event_work.py tests/integration/test_aio_waits.py tests/integration/test_aio_producer.py::test_await_send_resolves_with_the_calls_accounting[mock] tests/integration/test_aio_producer.py::test_failures_come_back_as_messages_with_their_errors tests/integration/test_aio_producer.py::test_block_policy_waits_for_room_off_the_event_loop tests/integration/test_aio_producer.py::test_cancelled_waiter_does_not_break_the_producer[mock] tests/integration/test_aio_producer.py::test_block_policy_gives_up_at_timeout_with_the_refused_messages_as_failures tests/integration/test_aio_consumer.py::test_async_for_reads_everything_and_leaving_async_with_records_committed_batches[mock] tests/integration/test_aio_consumer.py::test_an_uncommitted_batch_is_not_recorded_and_comes_back[mock] tests/integration/test_aio_consumer.py::test_a_cancelled_wait_loses_no_batch_and_the_loop_keeps_running tests/integration/test_aio_consumer.py::test_pause_holds_a_waiting_task_and_resume_wakes_it tests/integration/test_aio_consumer.py::test_seek_through_rdk_aio_reads_again_from_the_offset tests/integration/test_aio_consumer.py::test_an_error_that_stops_fetching_is_raised_to_the_waiting_task tests/integration/test_aio_consumer.py::test_group_mode_runs_coroutine_rebalance_callbacks_on_the_loop tests/integration/test_aio_consumer.py::test_receive_callback_is_refused_and_options_are_checked_as_rdk_consumer_does tests/integration/test_aio_consumer.py::test_resume_wakes_a_task_waiting_while_batches_were_buffered|rdk.aio._producer.* rdk.aio._consumer.* rdk.aio._event_work.* rdk.aio._share.xǁShareBatchǁ* rdk.aio._share.xǁShareConsumerǁ__init__* rdk.aio._share.xǁShareConsumerǁconsumer* rdk.aio._share.xǁShareConsumerǁbatches* rdk.aio._share.xǁShareConsumerǁ__aiter__* rdk.aio._share.xǁShareConsumerǁstop* rdk.aio._share.xǁShareConsumerǁerror* rdk.aio._share.xǁShareConsumerǁ__a* rdk.aio._share.xǁShareConsumerǁ__repr__*"
)
# A wall-clock limit per test (pytest-timeout, thread method: the run ends failed) for modules
# whose mutants can hang asleep: mutmut's own limit is CPU time, which a sleeping wait never
# reaches. The aio tests take a few seconds each.
declare -A WALL=([aio]=60)
ORDER=(slots tracker offsets layout accounting planner share_ack settle supervision aio)
[ $# -gt 0 ] && ORDER=("$@")

RUN=$(mktemp -d /tmp/rdk-mutation.XXXXXX)
echo "mutation runs in $RUN (kept)"
printf '%-12s %-34s %7s %7s %9s %7s %7s\n' module file mutants killed survived other score

for name in "${ORDER[@]}"; do
  spec=${MODULES[$name]:?"unknown module $name (one of: ${!MODULES[*]})"}
  src=${spec%%|*}
  rest=${spec#*|}
  tests=${rest%%|*}
  names=""
  [ "$rest" != "$tests" ] && names=${rest#*|}
  names=${MUTATION_NAMES:-$names}
  dir=$RUN/$name
  mkdir -p "$dir"
  cp -a "$ROOT/src" "$ROOT/tests" "$ROOT/pyproject.toml" "$dir/"
  find "$dir" -name __pycache__ -prune -exec rm -rf {} +
  {
    echo
    echo "[tool.mutmut]"
    echo 'source_paths = ["src/"]'
    set -f; printf 'only_mutate = ['
    sep=""; for f in $src; do printf '%s"%s"' "$sep" "$f"; sep=", "; done; set +f
    echo ']'
    printf 'pytest_add_cli_args_test_selection = ['
    sep=""; for t in $tests; do printf '%s"%s"' "$sep" "$t"; sep=", "; done
    echo ']'
    wall=""
    [ -n "${WALL[$name]:-}" ] && wall=", \"--timeout=${WALL[$name]}\", \"--timeout-method=thread\""
    echo "pytest_add_cli_args = [\"-p\", \"no:cacheprovider\", \"-q\", \"-x\"$wall]"
  } >> "$dir/pyproject.toml"
  # shellcheck disable=SC2086  # (the names are fnmatch patterns for mutmut, not for the shell)
  (cd "$dir" && set -f && "$PY" -m mutmut run --max-children "$JOBS" $names > run.log 2>&1) || {
    echo "$name: mutmut failed, see $dir/run.log" >&2; continue; }
  (cd "$dir" && "$PY" -m mutmut results --all true > results.txt 2>&1) || true
  "$PY" - "$name" "$src" "$dir/results.txt" "$names" <<'PY'
import collections, fnmatch, re, sys
name, src, path, names = sys.argv[1:]
patterns = names.split()
status = collections.Counter()
for line in open(path):
    m = re.match(r"\s*(\S+__mutmut_\d+): (.+)$", line)
    if m and (not patterns or any(fnmatch.fnmatchcase(m.group(1), p) for p in patterns)):
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
