"""The code examples in docstrings (they appear in the API reference) run against a real broker.

Every ```python block in a docstring under src/rdk is collected (with ``ast``, so nothing is
imported to find them). A docstring example is a fragment that names things it does not
define (``brokers``, ``spark``, ``handle``), so each gets a harness here, keyed by the
docstring's owner: the harness defines those names, runs the fragment as written, and checks
what the fragment promises. An example without a harness fails the test: a new docstring
example cannot go unexecuted.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from helpers import kafka_unavailable

import rdk

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "rdk"


def docstring_examples() -> dict[str, list[str]]:
    """{owner (module or module:Class.func): [python blocks]} for every docstring under src/rdk."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        owners: list[tuple[str, ast.AST]] = [(module, tree)]
        owners += [(f"{module}:{node.name}", node) for node in ast.walk(tree)
                   if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
        for owner, node in owners:
            doc = ast.get_docstring(node)  # type: ignore[arg-type]
            blocks = _python_blocks(doc or "")
            if blocks:
                found.setdefault(owner, []).extend(blocks)
    return found


def _python_blocks(doc: str) -> list[str]:
    blocks, current = [], None
    for line in doc.splitlines():
        stripped = line.strip()
        if current is None and stripped == "```python":
            current, indent = [], len(line) - len(line.lstrip())
        elif current is not None and stripped == "```":
            blocks.append(textwrap.dedent("\n".join(current)))
            current = None
        elif current is not None:
            current.append(line[indent:] if line[:indent].strip() == "" else line)
    return blocks


# harness: program text with {example} replaced by the example (indented as the harness needs)
HARNESSES = {
    "rdk.aio._consumer:Consumer": ('''
import asyncio, os, pathlib
import rdk, rdk.aio

brokers, topic = os.environ["RDK_BROKERS"], "events"
with rdk.Producer(brokers) as p:
    p.send(topic, 0, [b"m%d" % i for i in range(50)])
    assert p.flush(10) == 0
handled = []

async def handle(messages):
    handled.extend(m.value for m in messages)

async def example():
{example}

async def main():
    task = asyncio.ensure_future(example())
    offset_file = pathlib.Path("offsets", topic + "-0.offset")
    for _ in range(600):  # at most 60 s: until every message is handled and its offset recorded
        if len(handled) == 50 and offset_file.exists() and offset_file.read_text().strip() == "49":
            break
        await asyncio.sleep(0.1)
    task.cancel()         # the consumer waits for a batch that never comes: cancelling loses nothing
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert handled == [b"m%d" % i for i in range(50)], handled
    assert offset_file.read_text().strip() == "49"

asyncio.run(main())
''', 4),
    "rdk.aio._share:ShareConsumer": ('''
import asyncio, os
import rdk, rdk.aio

brokers = os.environ["RDK_BROKERS"]
with rdk.Producer(brokers) as p:
    p.send("events", 0, [b"m%d" % i for i in range(20)])
    assert p.flush(10) == 0
handled = []

async def handle(m):
    first = m.value not in handled
    handled.append(m.value)
    return m.value != b"m3" or not first  # m3 is released once, handled when it comes back

async def example():
{example}

async def main():
    task = asyncio.ensure_future(example())
    for _ in range(600):  # at most 60 s
        if sorted(set(handled)) == sorted(b"m%d" % i for i in range(20)) and len(handled) == 21:
            break
        await asyncio.sleep(0.1)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert sorted(handled) == sorted([b"m%d" % i for i in range(20)] + [b"m3"]), handled

asyncio.run(main())
''', 4),
    "rdk.spark": ('''
import os
from pyspark.sql import SparkSession
import rdk

brokers = os.environ["RDK_BROKERS"]
with rdk.Producer(brokers) as p:
    p.send("events", 0, [b"a", b"b", b"c"])
    assert p.flush(10) == 0
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
try:
{example}
    assert sorted(r.value for r in df.select("value").collect()) == [b"a", b"b", b"c"]
finally:
    spark.stop()
''', 4),
}


def test_every_docstring_example_has_a_harness():
    examples = docstring_examples()
    assert examples, "no docstring example found: the collector is broken"
    assert sorted(set(examples) - set(HARNESSES)) == [], "docstring examples without a harness here"
    assert all(len(blocks) == 1 for blocks in examples.values()), "one example per docstring"


@pytest.fixture
def fresh_events(kafka_cluster):
    """The session's Kafka with an empty topic "events" (dropped and made again)."""
    with rdk.Admin(kafka_cluster.bootstrap_servers) as admin:
        if "events" in {t.name for t in admin.list_topics()}:
            admin.delete_topics(["events"])
        admin.create_topics({"events": 1}, timeout=30)
    yield kafka_cluster.bootstrap_servers


@pytest.mark.parametrize("owner", sorted(HARNESSES))
def test_docstring_example_runs(owner, fresh_events, tmp_path):
    if kafka_unavailable():
        pytest.skip(kafka_unavailable())
    example = docstring_examples()[owner][0]
    harness, indent = HARNESSES[owner]
    program = harness.replace("{example}", textwrap.indent(example, " " * indent))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RDK_")}
    env.update(RDK_BROKERS=fresh_events, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(ROOT / "src"))
    script = tmp_path / f"example_{uuid.uuid4().hex[:6]}.py"
    script.write_text(program)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=240)
    assert run.returncode == 0, (f"{owner}'s docstring example failed:\n"
                                 f"{run.stdout[-2000:]}\n{run.stderr[-4000:]}")
