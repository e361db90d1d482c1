#!/usr/bin/env bash
# Start/stop a development broker and print `export RDK_BROKERS=...` (as kafka-native's script did).
#   scripts/test-server.sh start|stop|status
# RDK_TEST_SERVER=tansu (default) or any kind of `python -m rdk.mock --list-kinds` (rdk.testing's
# registry: mock, tansu, tansu-durable, kafka); RDK_TEST_BROKERS=N for a kind that has several nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${RDK_TEST_SERVER:-tansu}
state=.rdk-test-server
py=.venv/bin/python
[[ -x $py ]] || py=python3

case ${1:-} in
  start)
    if [[ -f $state/pid ]] && kill -0 "$(cat $state/pid)" 2>/dev/null; then
      echo "export RDK_BROKERS=$(cat $state/brokers)"; exit 0
    fi
    kinds=$($py -m rdk.mock --list-kinds)
    if [[ " $kinds " != *" $kind "* ]]; then
      echo "unknown RDK_TEST_SERVER=$kind (one of: $kinds)" >&2; exit 2
    fi
    mkdir -p $state
    cmd=(-m rdk.mock --kind "$kind")
    [[ -n ${RDK_TEST_BROKERS:-} ]] && cmd+=(--brokers "$RDK_TEST_BROKERS")
    # serves in the foreground and prints RDK_BROKERS=... once it answers (Apache Kafka: seconds)
    nohup $py -u "${cmd[@]}" >$state/log 2>&1 &
    echo $! >$state/pid
    for _ in $(seq 1800); do
      grep -q '^RDK_BROKERS=' $state/log 2>/dev/null && break
      kill -0 "$(cat $state/pid)" 2>/dev/null || break
      sleep 0.1
    done
    sed -n 's/^RDK_BROKERS=//p' $state/log >$state/brokers
    if [[ ! -s $state/brokers ]]; then
      echo "the $kind broker did not start:" >&2; cat $state/log >&2
      kill "$(cat $state/pid)" 2>/dev/null || true; rm -rf $state; exit 1
    fi
    echo "export RDK_BROKERS=$(cat $state/brokers)" ;;
  stop)
    if [[ -f $state/pid ]]; then
      pid=$(cat $state/pid)
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -rf $state
    echo "unset RDK_BROKERS" ;;
  status)
    if [[ -f $state/pid ]] && kill -0 "$(cat $state/pid)" 2>/dev/null; then
      echo "running: RDK_BROKERS=$(cat $state/brokers)"
    else
      echo "not running"; exit 1
    fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
