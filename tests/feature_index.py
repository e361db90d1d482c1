"""The feature index of the tests (tests/FEATURES.md): which test files test each feature.

A feature is found by names: a test belongs to a feature when its function name or its
file's name matches the feature's pattern (snake_case words, case-insensitive). The index is
generated, never written by hand: ``python tests/feature_index.py > tests/FEATURES.md``;
``tests/docs/test_feature_index.py`` fails when the file and the tests disagree, and when a
test file belongs to no feature at all.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent

W = r"(?:^|_)"  # a snake_case word starts here
E = r"(?:_|$)"  # ... and ends here

# (feature, pattern over test function names); order is the order of the index
FEATURES: list[tuple[str, str]] = [
    ("producer: send, delivery, partitioning, queue full",
     rf"{W}(send|sends|sent|produce[sd]?|producer|deliver\w*|partitioner|balancer|queue_full|flush\w*){E}"),
    ("consumer: slot mode, batches, receive_callback",
     rf"{W}(consume[sdr]?|consumers?|batch(es)?|receive_callback|fetch\w*){E}"),
    ("consumer groups (classic and KIP-848), rebalances",
     rf"{W}(group|groups|rebalanc\w*|revok\w*|assign\w*|kip848|member\w*){E}"),
    ("pause and resume", rf"{W}(pause[sd]?|resume[sd]?|paused){E}"),
    ("seek and start offsets", rf"{W}(seek\w*|start_offset|earliest|latest|rewind\w*){E}"),
    ("offset files", rf"{W}(offset_files?|offsets?_dir|offsets?)({E})"),
    ("worker slots and WorkerPool", rf"{W}(worker_slots?|slots?|workers?|worker_pool|pool){E}"),
    ("stats callbacks", rf"{W}(stats|statistics){E}"),
    ("transactions and fencing", rf"{W}(transaction\w*|txn|fenc\w*|exactly_once|read_committed){E}"),
    ("share groups", rf"{W}(share|shares|share_group\w*|accept\w*|release[sd]?|reject\w*){E}"),
    ("asyncio (rdk.aio)", rf"{W}(aio|async\w*|await\w*|loop|uvloop|coroutines?|eventfd){E}"),
    ("admin", rf"{W}(admin|create_topic\w*|delete_topic\w*|create_partitions|watermarks?|describe\w*){E}"),
    ("CLI (rdk ...)", rf"{W}(cli|rdk_\w+|pipe|stdin|stdout|exit_code|argv){E}"),
    ("schema registry and serializers",
     rf"{W}(registry|avro|protobuf|json_schema|serializ\w*|deserializ\w*|subject\w*){E}"),
    ("Spark source (format rdkafka, batch)", rf"{W}(spark|read|reads|reader|load|planner|ranges?){E}"),
    ("Spark streaming and triggers",
     rf"{W}(stream\w*|trigger\w*|checkpoint\w*|available_now|micro_batch\w*){E}"),
    ("Spark sink", rf"{W}(sink|write|writes|writer|save\w*){E}"),
    ("headers, keys, timestamps", rf"{W}(headers?|keys?|timestamps?){E}"),
    ("topic regex subscriptions", rf"{W}(regex\w*|pattern\w*){E}"),
    ("TLS, SASL, OAuth, authentication",
     rf"{W}(ssl|tls|sasl|scram|oauth\w*|kerberos|gssapi|auth\w*|password){E}"),
    ("broker failures and fault injection",
     rf"{W}(kill\w*|sigkill\w*|crash\w*|down|leader\w*|coordinator\w*|failover|fault\w*|outage){E}"),
    ("bad input and misuse (errors naming the bad thing)",
     rf"{W}(bad|invalid|wrong|misuse|refuse[sd]?|raises?|rejects?|unknown|missing|typo\w*){E}"),
    ("closing, stopping, exit", rf"{W}(close[sd]?|stop\w*|exit\w*|shutdown|atexit|context_manager){E}"),
    ("resource bounds, copies, many partitions",
     rf"{W}(memory|copies|copy|leak\w*|bound\w*|threads?|partitions_cost|many_partitions|fds?){E}"),
    ("test infrastructure (KafkaCluster, mock, Tansu, Apicurio)",
     rf"{W}(kafka_cluster|mock\w*|tansu|cluster|nodes?|jars?|versions?){E}"),
    ("librdkafka binding and patches",
     rf"{W}(binding|cffi|librdkafka|patch\w*|gates?|options?|config\w*){E}"),
    ("fuzzing and properties", rf"{W}(fuzz\w*|hypothesis|random\w*|propert\w*|asan){E}"),
    ("packaging, docs, lint gates, examples, benchmarks",
     rf"{W}(wheel|docs?|documented|docstrings?|reference|examples?|samples?|plots?|bench\w*|lazy|"
     rf"import\w*|main_job|ruff|mypy|lint|feature_index){E}"),
]

_TEST = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)", re.M)


def test_names() -> dict[str, list[str]]:
    """``{path relative to the repo: [test function names]}`` of every test file."""
    root = TESTS.parent
    return {str(p.relative_to(root)): _TEST.findall(p.read_text())
            for p in sorted(TESTS.rglob("test_*.py"))}


def index(names: dict[str, list[str]]) -> list[tuple[str, str, Counter]]:
    """For each feature: its name, its pattern and ``Counter({file: matching tests})``."""
    out = []
    for feature, pattern in FEATURES:
        rx = re.compile(pattern, re.I)
        hits: Counter = Counter()
        for path, tests in names.items():
            in_file = bool(rx.search(Path(path).stem[len("test_"):]))  # test_aio_*.py: all of it
            n = sum(1 for t in tests if in_file or rx.search(t[len("test_"):]))
            if n:
                hits[path] = n
        out.append((feature, pattern, hits))
    return out


def unindexed(names: dict[str, list[str]]) -> list[str]:
    """Test files none of whose tests belongs to a feature."""
    covered = {path for _, _, hits in index(names) for path in hits}
    return [path for path in names if path not in covered]


def render(names: dict[str, list[str]]) -> str:
    lines = [
        "# Tests by feature",
        "",
        "Generated by `python tests/feature_index.py > tests/FEATURES.md` from the names of the",
        "tests and their files (patterns in tests/feature_index.py);",
        "`tests/docs/test_feature_index.py` keeps it true. Each feature lists the files that",
        "test it, with how many of their tests match, most first. A test may serve several",
        "features.",
        "",
    ]
    for feature, _, hits in index(names):
        total = sum(hits.values())
        lines.append(f"## {feature} ({total} tests in {len(hits)} files)")
        lines.append("")
        for path, n in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"- `{path}`: {n}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    all_names = test_names()
    missing = unindexed(all_names)
    if missing:
        sys.exit("test files in no feature (rename their tests or add a pattern): " + ", ".join(missing))
    sys.stdout.write(render(all_names))
