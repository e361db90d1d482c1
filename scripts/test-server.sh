#!/usr/bin/env bash
# Start/stop a development broker and print `export RDK_BROKERS=...` (as kafka-native's script did).
#   scripts/test-server.sh start|stop|status
# RDK_TEST_SERVER=tansu (default) | tansu-durable (data in moto's S3 server) | mock | docker
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
    mkdir -p $state
    case $kind in
      tansu|tansu-durable|mock)
        # each serves in the foreground and prints RDK_BROKERS=... once it answers
        if [[ $kind == mock ]]; then cmd=(-m rdk.mock --brokers 3); else cmd=(-m rdk.mock --kind "$kind"); fi
        nohup $py -u "${cmd[@]}" >$state/log 2>&1 &
        echo $! >$state/pid
        for _ in $(seq 400); do
          grep -q '^RDK_BROKERS=' $state/log 2>/dev/null && break
          kill -0 "$(cat $state/pid)" 2>/dev/null || break
          sleep 0.1
        done
        sed -n 's/^RDK_BROKERS=//p' $state/log >$state/brokers
        if [[ ! -s $state/brokers ]]; then
          echo "the $kind broker did not start:" >&2; cat $state/log >&2
          kill "$(cat $state/pid)" 2>/dev/null || true; rm -rf $state; exit 1
        fi ;;
      docker)
        docker run -d --rm -p 9092:9092 --name rdk-test-kafka apache/kafka:3.9.0 >$state/container
        echo 0 >$state/pid
        echo "127.0.0.1:9092" >$state/brokers ;;
      *) echo "unknown RDK_TEST_SERVER=$kind (tansu, tansu-durable, mock or docker)" >&2; exit 2 ;;
    esac
    echo "export RDK_BROKERS=$(cat $state/brokers)" ;;
  stop)
    if [[ -f $state/container ]]; then docker stop rdk-test-kafka >/dev/null || true; fi
    if [[ -f $state/pid ]] && [[ $(cat $state/pid) != 0 ]]; then kill "$(cat $state/pid)" 2>/dev/null || true; fi
    rm -rf $state
    echo "unset RDK_BROKERS" ;;
  status)
    if [[ -f $state/pid ]] && { [[ $(cat $state/pid) == 0 ]] || kill -0 "$(cat $state/pid)" 2>/dev/null; }; then
      echo "running: RDK_BROKERS=$(cat $state/brokers)"
    else
      echo "not running"; exit 1
    fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
