#!/usr/bin/env bash
# A Spark standalone cluster on 127.0.0.1 from pyspark's own jars, and rdk's packed environment.
#
#   scripts/spark-cluster.sh start    a master and two workers (1 core, 1 GiB each); prints the master URL
#   scripts/spark-cluster.sh stop     stops them and their executors (process groups; always safe to run)
#   scripts/spark-cluster.sh status   the master URL and the state of each daemon (exit 0: all running)
#   scripts/spark-cluster.sh env      the wheel (scripts/build-wheel.sh) and the packed
#                                     environment built from it; prints the archive's path
#
# State (pid files, logs, the workers' work dirs with the executors' logs) is in .spark-cluster/cluster,
# or in $RDK_SPARK_CLUSTER_DIR; the packed environment is in .spark-cluster/env. Both are git-ignored.
# Every daemon runs in a process group of its own (setsid), which its executors and their Python
# workers join, so `stop` leaves nothing behind. All listeners are on 127.0.0.1 (SPARK_LOCAL_IP).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-$root/.venv/bin/python}
[[ -x $py ]] || py=python3
state=${RDK_SPARK_CLUSTER_DIR:-$root/.spark-cluster/cluster}
envdir=$root/.spark-cluster/env
workers=2
# Two names of 127.0.0.1, so that Spark sees two hosts: it never starts a speculative copy of a
# task on a host where an attempt of it runs (spark.speculation needs a second host).
worker_hosts=(127.0.0.1 localhost)
start_timeout=90  # seconds for the master and each worker to come up

spark_home() { "$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }

daemon_env() {
  export SPARK_HOME SPARK_SCALA_VERSION=2.13 SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=127.0.0.1
  export SPARK_LOG_DIR=$state/logs SPARK_PID_DIR=$state
  # no REST submission server; the web UIs bind to SPARK_LOCAL_IP on a free port
  export SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false"
  export SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false"
  export SPARK_DAEMON_MEMORY=512m
}

# alive NAME: the daemon's pid file names a live process that is still that daemon
alive() {
  local pid
  pid=$(cat "$state/$1.pid" 2>/dev/null) || return 1
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "org.apache.spark.deploy"
}

# wait_log FILE REGEX NAME: the first match of REGEX (sed -E, one group) in FILE, waiting for it
wait_log() {
  local file=$1 regex=$2 name=$3 found="" i
  for ((i = 0; i < start_timeout * 10; i++)); do
    found=$(sed -nE "s#.*$regex.*#\\1#p" "$file" 2>/dev/null | head -1)
    [[ -n $found ]] && { echo "$found"; return 0; }
    alive "$name" || break
    sleep 0.1
  done
  echo "spark-cluster: the $name did not start; its log ($file):" >&2
  tail -40 "$file" >&2 || true
  return 1
}

launch() {  # launch NAME CLASS ARGS...: one daemon, in a new session and process group
  local name=$1 pidfile=$state/$1.pid i
  shift
  rm -f "$pidfile"
  # the pid file is written from inside the new session, so a pid in it is a process group
  setsid bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidfile" \
    "$SPARK_HOME/bin/spark-class" "$@" >"$state/logs/$name.out" 2>&1 </dev/null &
  for ((i = 0; i < 100; i++)); do [[ -s $pidfile ]] && return 0; sleep 0.05; done
  echo "spark-cluster: the $name did not start" >&2
  return 1
}

stop_all() {
  local name pid pids=() i
  for name in worker-2 worker-1 master; do
    pid=$(cat "$state/$name.pid" 2>/dev/null) || continue
    # the pid was a session leader (setsid): its process group holds the executors and Python workers
    if kill -0 -- "-$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
    rm -f "$state/$name.pid"
  done
  for ((i = 0; i < 100 && ${#pids[@]}; i++)); do
    local left=()
    for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && left+=("$pid"); done
    pids=("${left[@]+"${left[@]}"}")
    ((${#pids[@]})) && sleep 0.1
  done
  for pid in "${pids[@]+"${pids[@]}"}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  rm -f "$state/master.url"
  # each executor unpacked the shipped environment (~225 MB) in its work dir: keep only the logs
  rm -rf "$state"/work-*/app-*/*/env
}

start() {
  if alive master && [[ -s $state/master.url ]]; then
    local n=0 i
    for ((i = 1; i <= workers; i++)); do alive "worker-$i" && n=$((n + 1)); done
    if ((n == workers)); then cat "$state/master.url"; return 0; fi
  fi
  stop_all
  SPARK_HOME=$(spark_home)
  daemon_env
  mkdir -p "$state/logs"
  trap 'stop_all' ERR
  launch master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 0 --webui-port 0
  local url ui i
  url=$(wait_log "$state/logs/master.out" "Starting Spark master at (spark://[0-9.:]+)" master)
  ui=$(wait_log "$state/logs/master.out" "started at (http://[0-9.:]+)" master)
  for ((i = 1; i <= workers; i++)); do
    mkdir -p "$state/work-$i"
    launch "worker-$i" org.apache.spark.deploy.worker.Worker --host "${worker_hosts[i - 1]}" --port 0 \
      --webui-port 0 --cores 1 --memory 1g --work-dir "$state/work-$i" "$url"
  done
  for ((i = 1; i <= workers; i++)); do
    wait_log "$state/logs/worker-$i.out" "(Successfully registered with master)" "worker-$i" >/dev/null
  done
  trap - ERR
  echo "$ui" >"$state/master.ui"
  echo "$url" | tee "$state/master.url"
}

status() {
  local name ok=0 total=0
  for name in master $(seq -f "worker-%g" 1 $workers); do
    total=$((total + 1))
    if alive "$name"; then
      ok=$((ok + 1))
      echo "$name: running (pid $(cat "$state/$name.pid"))"
    else
      echo "$name: stopped"
    fi
  done
  if ((ok == total)); then
    echo "master: $(cat "$state/master.url") (web UI $(cat "$state/master.ui" 2>/dev/null))"
    return 0
  fi
  ((ok == 0)) && return 3
  return 1
}

# The wheel of the current source, copied into $envdir: scripts/build-wheel.sh (idempotent: it
# rebuilds only when the sources changed, and prints the wheel's path) where it exists, else pip wheel.
wheel() {
  local whl try
  for try in 1 2; do  # another build may replace dist/'s wheel between our build and our copy
    if [[ -f scripts/build-wheel.sh ]]; then
      whl=$(bash scripts/build-wheel.sh | tail -1)
    else
      "$py" -m pip wheel -q --no-deps --no-build-isolation -w "$envdir/build" . >&2
      whl=$(ls -t "$envdir"/build/rdk-*.whl | head -1)
    fi
    rm -f "$envdir"/wheel/*.whl
    mkdir -p "$envdir/wheel"
    if cp "$whl" "$envdir/wheel/" 2>/dev/null; then
      echo "$envdir/wheel/$(basename "$whl")"
      return 0
    fi
    echo "spark-cluster: $whl vanished (a concurrent build?); building again" >&2
  done
  return 1
}

# the recipe of docs/guide/spark.md: a venv with the wheel and pyarrow, packed with venv-pack (once per wheel).
pack_env() {
  local whl sum
  mkdir -p "$envdir"
  exec 9>"$envdir/.lock"
  flock 9
  whl=$(wheel)
  sum=$(sha256sum "$whl" | cut -c1-16)
  if [[ $(cat "$envdir/rdk-env.wheel" 2>/dev/null) != "$sum" || ! -s $envdir/rdk-env.tar.gz ]]; then
    rm -rf "$envdir/rdk-env" "$envdir/rdk-env.tar.gz" "$envdir/rdk-env.wheel"
    (
      cd "$envdir"
      base=$("$py" -c 'import sys; print(sys._base_executable)')
      "$base" -m venv rdk-env
      rdk-env/bin/pip install -q "$whl" pyarrow venv-pack
      rdk-env/bin/venv-pack -q -p rdk-env -o rdk-env.tar.gz
    ) >&2
    echo "$sum" >"$envdir/rdk-env.wheel"
  fi
  echo "$envdir/rdk-env.tar.gz"
}

case ${1:-} in
  start) start ;;
  stop) stop_all; echo "spark-cluster: stopped" ;;
  status) status ;;
  env) pack_env ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
