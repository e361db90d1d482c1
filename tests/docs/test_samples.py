"""Every code sample of README.md and docs/ (but docs/reference/, the generated API pages)
runs as a complete program, and passes when it exits with 0.

Convention
----------
Every ```python block is collected; ```sh / ```console / ```bash / ```shell blocks only when
marked. A block's environment is given by an optional HTML comment on the line just before
its fence (invisible in the rendered page)::

    <!-- sample: env=kafka topics=events:4,totals -->

- ``env=kafka`` (the default): the session's Apache Kafka (fixture ``kafka_cluster``);
  ``RDK_BROKERS`` is its bootstrap servers.
- ``env=sasl``: a 1-node Apache Kafka with SSL and SASL_SSL listeners (PLAIN, SCRAM-SHA-256/512
  and OAUTHBEARER with unsecured JWS tokens), started once per session when a block needs it:
  ``RDK_BROKERS`` (its PLAINTEXT listener), ``RDK_SSL_BROKERS``, ``RDK_SASL_BROKERS``
  (SASL_SSL), ``RDK_CA_LOCATION`` (PEM of the CA that signed the broker's certificate, for
  127.0.0.1 and localhost; also copied to ``ca.pem`` in the block's directory),
  ``RDK_SASL_USERNAME``, ``RDK_SASL_PASSWORD``.
- ``env=spark``: ``env=kafka``'s variables plus ``PYSPARK_PYTHON`` (this interpreter) and
  ``RDK_SPARK_KAFKA_JARS`` (comma-separated jars of Spark's JVM Kafka connector, empty when
  scripts/setup.sh did not fetch them). The block makes (and stops) its own local SparkSession.
- ``env=none``: no broker and no RDK_* variable (a block may start its own, e.g. KafkaCluster).
- ``topics=NAME[:PARTITIONS],...`` (1 partition by default): created on the environment's
  cluster before the block runs, after deleting any topic of that name (so reruns and blocks
  sharing a name start empty), and deleted afterwards.
- ``registry=yes``: ``RDK_SCHEMA_REGISTRY`` is the URL of the session's Apicurio Registry
  (Confluent's API; fixture ``schema_registry``), with any ``env``.
- ``timeout=SECONDS`` (default 120, 300 with ``env=spark``): the process group is killed after
  it and the test fails.
- An unknown option or environment fails the test: a typo never changes where a block runs.

A python block runs as ``python <block>.py`` (this interpreter) in a fresh empty directory,
with the RDK_* variables of the caller removed and the block's set; it must end on its own
(no Ctrl-C) and asserts what it shows. A marked shell block runs line by line: each command
(a trailing ``\\`` continues it; blank and comment lines are skipped; in ``console`` blocks only
the lines after a ``$`` prompt) runs through ``bash -o pipefail -c`` in one fresh directory with
the same variables plus ``B`` (= ``RDK_BROKERS``, the pages' ``$B``) and the venv's ``rdk`` on
PATH, and must exit 0. A command whose trailing comment says ``until Ctrl-C`` (``rdk mock``,
``rdk stats --watch``) gets SIGINT once it printed its first line on stdout, as a reader
would press Ctrl-C, and must then exit 0. Every process a block started is killed when it
ends (its process group; KafkaCluster nodes, in groups of their own, die with their parent
through PR_SET_PDEATHSIG), so no broker or JVM outlives the test. Without Kafka's jars or Java
the broker fixtures skip the blocks that need them, naming the reason (``-ra``).

Test ids are the page and the line of the fence: ``README.md:43``, ``guide/consumer.md:7``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ENVIRONMENTS = ("kafka", "sasl", "spark", "none")
SHELLS = ("sh", "console", "bash", "shell")
DEFAULT_TIMEOUT = {"spark": 300.0}  # s; 120 for the other environments
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
CLOSE = re.compile(r"^\s*```(?![\w+-])")  # lenient: text may follow (a snippet marker)
MARK = re.compile(r"^\s*<!--\s*sample:(?P<options>.*?)-->\s*$")


@dataclass
class Sample:
    """One fenced block: where it is, its language, its code and its sample options."""

    page: str  # "README.md", "guide/consumer.md"
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marked: bool
    options: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[tuple[str, Path]]:
    """README.md and every page of docs/ but the generated API reference."""
    found = [("README.md", ROOT / "README.md")]
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS)
        if rel.parts[0] != "reference":
            found.append((rel.as_posix(), path))
    return found


def blocks(page: str, text: str) -> list[Sample]:
    """The fenced blocks of one page, with the sample comment just before each, if any."""
    lines = text.splitlines()
    found: list[Sample] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m["lang"]:
            i += 1
            continue
        indent, start = m["indent"], i
        i += 1
        body: list[str] = []
        while i < len(lines) and not CLOSE.match(lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        mark = MARK.match(lines[start - 1]) if start > 0 else None
        options = dict(parse_options(mark["options"])) if mark else {}
        found.append(Sample(page, start + 1, m["lang"], "\n".join(body) + "\n", mark is not None, options))
    return found


def parse_options(text: str) -> list[tuple[str, str]]:
    """``key=value`` words of a sample comment."""
    pairs = []
    for word in shlex.split(text):
        key, sep, value = word.partition("=")
        pairs.append((key, value if sep else ""))
    return pairs


def collect() -> list[Sample]:
    samples = []
    for page, path in pages():
        for b in blocks(page, path.read_text(encoding="utf-8")):
            if b.lang == "python" or (b.lang in SHELLS and b.marked):
                samples.append(b)
    return samples


SAMPLES = collect()


def check_options(sample: Sample) -> tuple[str, dict[str, int], float]:
    """(env, {topic: partitions}, timeout) of a sample; a bad comment fails naming it."""
    unknown = set(sample.options) - {"env", "topics", "timeout", "registry"}
    if unknown:
        pytest.fail(f"{sample.id}: unknown sample option(s) {sorted(unknown)}", pytrace=False)
    env = sample.options.get("env", "kafka")
    if env not in ENVIRONMENTS:
        pytest.fail(f"{sample.id}: env={env!r} is not one of {ENVIRONMENTS}", pytrace=False)
    topics: dict[str, int] = {}
    for item in filter(None, sample.options.get("topics", "").split(",")):
        name, _, count = item.partition(":")
        topics[name] = int(count or 1)
    return env, topics, float(sample.options.get("timeout", DEFAULT_TIMEOUT.get(env, 120.0)))


def child_environment(variables: dict[str, str]) -> dict[str, str]:
    """os.environ without the caller's RDK_* (and B), plus ``variables``; the venv's bin first
    on PATH (``rdk`` for the shell samples)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RDK_") and k != "B"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env.update(variables)
    return env


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL whatever is left of the process group of ``proc`` (brokers, JVMs, workers)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def tail(text: str, limit: int = 6000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


def run_python(sample: Sample, cwd: Path, env: dict[str, str], timeout: float) -> None:
    script = cwd / f"sample_{sample.line}.py"
    script.write_text(sample.code, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, script.name], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        out, _ = proc.communicate()
    finally:
        kill_group(proc)
    if timed_out:
        pytest.fail(f"{sample.id}: did not end within {timeout:g} s (killed)\n{tail(out)}", pytrace=False)
    if proc.returncode != 0:
        where = re.findall(rf'File "[^"]*{script.name}", line (\d+)', out)
        at = f" at {sample.page}:{sample.line + int(where[-1])}" if where else ""
        pytest.fail(f"{sample.id}: exited with {proc.returncode}{at}\n{tail(out)}", pytrace=False)


def shell_commands(sample: Sample) -> list[tuple[int, str]]:
    """(line in the page, command) of each command of a shell block."""
    commands: list[tuple[int, str]] = []
    pending: list[str] = []
    first = 0
    for n, raw in enumerate(sample.code.splitlines(), start=sample.line + 1):
        line = raw.rstrip()
        if not pending:
            if sample.lang == "console":
                if not line.startswith("$ "):
                    continue  # output shown in the page
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            first = n
        pending.append(line[:-1] if line.endswith("\\") else line)
        if not line.endswith("\\"):
            commands.append((first, " ".join(pending)))
            pending = []
    return commands


def run_command(where: str, command: str, cwd: Path, env: dict[str, str], timeout: float) -> None:
    """One shell command: must exit 0; ``until Ctrl-C`` ones get SIGINT after their first line."""
    interrupt = re.search(r"#.*until Ctrl-C", command) is not None
    proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    out: list[str] = []
    err: list[str] = []
    first_line = threading.Event()

    def read_out() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            out.append(line)
            first_line.set()
        first_line.set()

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)]  # type: ignore[arg-type]
    for t in readers:
        t.start()
    try:
        if interrupt and first_line.wait(timeout) and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.wait()
        for t in readers:
            t.join(10)
        pytest.fail(f"{where}: `{command}` did not end within {timeout:g} s (killed)\n"
                    f"{tail(''.join(out + err))}", pytrace=False)
    finally:
        kill_group(proc)
    for t in readers:
        t.join(10)
    print(f"$ {command}  [exit {proc.returncode}]\n{tail(''.join(out), 1500)}{tail(''.join(err), 1500)}")
    if interrupt and not out:
        pytest.fail(f"{where}: `{command}` ended before printing a line\n{tail(''.join(err))}", pytrace=False)
    if proc.returncode != 0:
        pytest.fail(f"{where}: `{command}` exited with {proc.returncode}\n--- stdout\n{tail(''.join(out))}"
                    f"\n--- stderr\n{tail(''.join(err))}", pytrace=False)


def marks(sample: Sample) -> list[pytest.MarkDecorator]:
    env = sample.options.get("env", "kafka")
    return {"kafka": [pytest.mark.kafka], "sasl": [pytest.mark.kafka],
            "spark": [pytest.mark.kafka, pytest.mark.spark]}.get(env, [])


@pytest.mark.parametrize("sample", [pytest.param(s, id=s.id, marks=marks(s)) for s in SAMPLES])
def test_sample(sample: Sample, sample_env, tmp_path: Path, request) -> None:
    """The block runs in its environment and exits 0."""
    env_name, topics, timeout = check_options(sample)
    env = child_environment(sample_env(env_name, topics, tmp_path))
    if sample.options.get("registry") == "yes":
        env["RDK_SCHEMA_REGISTRY"] = request.getfixturevalue("schema_registry").url
    if sample.lang == "python":
        run_python(sample, tmp_path, env, timeout)
        return
    for line, command in shell_commands(sample):
        run_command(f"{sample.page}:{line}", command, tmp_path, env, timeout)


def test_samples_are_found() -> None:
    """The collection sees the pages (a moved docs/ folder must not make the test vacuous)."""
    assert any(s.page == "getting-started.md" for s in SAMPLES)
    assert any(s.page.startswith("guide/") and s.lang in SHELLS for s in SAMPLES)
