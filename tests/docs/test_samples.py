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

Options of the commands that need the checkout (benchmarks, the wheel, the set-up scripts):

- ``cwd=clone``: the commands run in ``clone/`` of the block's directory, a view of the checkout:
  every top-level entry of the repository is a symlink to it, but ``bench/`` and ``docs/`` are
  copies (what a command writes there, ``--out docs/data/x.json`` or a script's own
  ``bench/x.json``, lands in the copy) and ``build/``, ``dist/`` are the checkout's (the wheel
  ``scripts/build-wheel.sh`` builds, or reuses for the same sources, is the one
  tests/packaging installs: built once per run).
- ``venv=fresh``: a new venv of this Python comes first on PATH (``pip``, ``python``), so a
  ``pip install`` of the block never touches the project's ``.venv``.
- ``append="ARGS"``: ARGS are added to the end of every command: the lean form of a
  benchmark (``--repeat 1 --messages 2000``; argparse takes the last value of a repeated
  option), so the documented command line itself (script, options, scenario names, broker
  kinds) is what runs and must be right. The option sits on the line above the block, in
  the page's source.
- ``session=yes``: the commands run in order in one ``bash -e -o pipefail``, for blocks whose
  lines share shell variables (``wheel=$(...)``).

Every shell block (and every fence without a language, which must get one) is run or
exempted: ``test_every_shell_block_is_run_or_exempted`` fails on a block of ``sh``,
``console``, ``bash`` or ``shell`` without a sample comment. An exemption is narrow and
checked, never a free pass::

    <!-- sample: exempt="needs a Spark standalone cluster" by=tests/spark/cluster_helpers.py -->

``by=`` names the files (comma-separated) that run the block's commands inside the README's
test command: ``.ci/run`` (which is that command), files under ``tests/``, or a script such a
test file names. The block's test then checks, for every command (and every part of one
joined by ``&&``, ``||``, ``;`` or ``|``), that those files name its program (the script for
``python X.py`` / ``bash X.sh``), every one of its options (``--events``: a whole word), and
every script path it passes; a ``tests/...`` path passed to pytest is covered when ``.ci/run``
is named and the file exists. A block whose commands change so that no named file runs them
any more fails, naming the command and what is missing.

Test ids are the page and the line of the fence: ``README.md:43``, ``guide/consumer.md:7``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
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


def all_blocks() -> list[Sample]:
    return [b for page, path in pages() for b in blocks(page, path.read_text(encoding="utf-8"))]


def collect() -> list[Sample]:
    return [b for b in all_blocks() if b.lang == "python" or (b.lang in SHELLS and b.marked)]


SAMPLES = collect()
OPTIONS = {"env", "topics", "timeout", "registry", "cwd", "venv", "append", "session", "exempt", "by"}


def check_options(sample: Sample) -> tuple[str, dict[str, int], float]:
    """(env, {topic: partitions}, timeout) of a sample; a bad comment fails naming it."""
    unknown = set(sample.options) - OPTIONS
    if unknown:
        pytest.fail(f"{sample.id}: unknown sample option(s) {sorted(unknown)}", pytrace=False)
    for key, allowed in (("cwd", ("clone",)), ("venv", ("fresh",)), ("session", ("yes",))):
        if key in sample.options and sample.options[key] not in allowed:
            pytest.fail(f"{sample.id}: {key}={sample.options[key]!r} is not one of {allowed}", pytrace=False)
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


def clone_view(cwd: Path) -> Path:
    """``cwd``/clone: the checkout as a block's commands see it (see ``cwd=clone``)."""
    view = cwd / "clone"
    view.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in (".git", "bench", "docs", "build", "dist"):
            continue
        (view / entry.name).symlink_to(entry)
    for name in ("bench", "docs"):
        shutil.copytree(ROOT / name, view / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("build", "dist"):
        (ROOT / name).mkdir(exist_ok=True)
        (view / name).symlink_to(ROOT / name)
    return view


def fresh_venv(cwd: Path, env: dict[str, str]) -> None:
    """A new venv of this Python in ``cwd``/fresh-venv, first on ``env``'s PATH."""
    venv = cwd / "fresh-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300,
                   capture_output=True)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env["PATH"]])
    env["VIRTUAL_ENV"] = str(venv)
    env.pop("PYTHONHOME", None)


# ---- exemptions: which files run a block's commands, and the check that they do -------------
SCRIPT = re.compile(r"[\w./-]+\.(?:py|sh)$")


def suite_runs(rel: str) -> bool:
    """Whether the README's test command runs the file ``rel``: .ci/run itself, a file of
    tests/, or a script that a file of tests/ names."""
    if rel == ".ci/run" or rel.startswith("tests/"):
        return True
    name = Path(rel).name
    return any(name in f.read_text(encoding="utf-8", errors="replace")
               for f in (ROOT / "tests").rglob("*.py"))


def names_path(text: str, path: str) -> bool:
    """``path`` (a/b/c.py) named in ``text``: as written, as ``"b" / "c.py"`` or by its file name
    in quotes."""
    parts = path.split("/")
    return (path in text or " / ".join(f'"{p}"' for p in parts[-2:]) in text
            or f'"{parts[-1]}"' in text)


def word_in(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def uncovered(command: str, text: str, ci: bool) -> list[str]:
    """What of ``command`` the files' ``text`` does not name (see the exemption convention)."""
    missing: list[str] = []
    for part in re.split(r"&&|\|\||;|\|", command):
        words = shlex.split(part, comments=True)
        while words and re.match(r"^\w+=", words[0]):  # VAR=value before the program
            words.pop(0)
        if not words:
            continue
        program = Path(words[0]).name
        args = words[1:]
        if re.fullmatch(r"python[\d.]*|bash|sh", program):
            scripts = [a for a in args if SCRIPT.fullmatch(a)]
            program = ""
        elif SCRIPT.fullmatch(words[0]):
            scripts, program = [words[0]], ""
        else:
            scripts = []
        if program and not word_in(text, program):
            missing.append(f"program {program!r}")
        for arg in args:
            if arg.startswith("-") and len(arg) > 1:
                flag = arg.split("=", 1)[0]
                if not word_in(text, flag):
                    missing.append(f"option {flag!r}")
            elif SCRIPT.fullmatch(arg) and arg not in scripts:
                scripts.append(arg)
        for path in scripts:
            if path.startswith("tests/") and ci and (ROOT / path).is_file():
                continue  # collected by .ci/run's pytest
            if not names_path(text, path):
                missing.append(f"script {path!r}")
    return missing


def check_exemption(sample: Sample) -> None:
    """An exempt block's ``by=`` files exist, run inside the test command, and name every
    program, option and script of its commands."""
    reason, by = sample.options.get("exempt", "").strip(), sample.options.get("by", "")
    if not reason or not by:
        pytest.fail(f"{sample.id}: an exemption needs a reason (exempt=\"...\") and by=FILES "
                    "that run its commands", pytrace=False)
    texts = []
    for rel in by.split(","):
        if not (ROOT / rel).is_file():
            pytest.fail(f"{sample.id}: by= names {rel}, which does not exist", pytrace=False)
        if not suite_runs(rel):
            pytest.fail(f"{sample.id}: by= names {rel}, which the README's test command does "
                        "not run (.ci/run, tests/, or a script a test names)", pytrace=False)
        texts.append((ROOT / rel).read_text(encoding="utf-8", errors="replace"))
    text = "\n".join(texts)
    problems = [f"{sample.page}:{line}: `{command}`: {', '.join(missing)}"
                for line, command in shell_commands(sample)
                if (missing := uncovered(command, text, ".ci/run" in by.split(",")))]
    if problems:
        pytest.fail(f"{sample.id} is exempt ({reason}), but {by} do not run:\n"
                    + "\n".join(problems), pytrace=False)


def with_args(command: str, extra: str) -> str:
    """``command`` with ``extra`` added before its trailing comment, if any."""
    if not extra:
        return command
    quote = ""
    for i, ch in enumerate(command):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            return f"{command[:i].rstrip()} {extra}  {command[i:]}"
    return f"{command} {extra}"


def run_session(sample: Sample, cwd: Path, env: dict[str, str], timeout: float) -> None:
    """The block's commands in order in one bash (they share shell variables)."""
    script = "\n".join(command for _, command in shell_commands(sample))
    run_command(sample.id, f"set -e\n{script}", cwd, env, timeout)


def marks(sample: Sample) -> list[pytest.MarkDecorator]:
    env = sample.options.get("env", "kafka")
    return {"kafka": [pytest.mark.kafka], "sasl": [pytest.mark.kafka],
            "spark": [pytest.mark.kafka, pytest.mark.spark]}.get(env, [])


@pytest.mark.parametrize("sample", [pytest.param(s, id=s.id, marks=marks(s)) for s in SAMPLES])
def test_sample(sample: Sample, sample_env, tmp_path: Path, request) -> None:
    """The block runs in its environment and exits 0."""
    env_name, topics, timeout = check_options(sample)
    if "exempt" in sample.options or "by" in sample.options:
        check_exemption(sample)
        return
    env = child_environment(sample_env(env_name, topics, tmp_path))
    if sample.options.get("registry") == "yes":
        env["RDK_SCHEMA_REGISTRY"] = request.getfixturevalue("schema_registry").url
    if sample.lang == "python":
        run_python(sample, tmp_path, env, timeout)
        return
    cwd = clone_view(tmp_path) if sample.options.get("cwd") == "clone" else tmp_path
    if sample.options.get("venv") == "fresh":
        fresh_venv(tmp_path, env)
    extra = sample.options.get("append", "")
    if sample.options.get("session") == "yes":
        run_session(sample, cwd, env, timeout)
        return
    for line, command in shell_commands(sample):
        run_command(f"{sample.page}:{line}", with_args(command, extra), cwd, env, timeout)


def test_samples_are_found() -> None:
    """The collection sees the pages (a moved docs/ folder must not make the test vacuous)."""
    assert any(s.page == "getting-started.md" for s in SAMPLES)
    assert any(s.page.startswith("guide/") and s.lang in SHELLS for s in SAMPLES)


def test_every_shell_block_is_run_or_exempted() -> None:
    """A shell block without a sample comment would never run: each one is marked (run, or
    exempted with by= files that the exemption's check reads); a fence without a language
    could hide one, so every fence has a language."""
    unmarked = [f"{b.id} ```{b.lang}" for b in all_blocks() if b.lang in SHELLS and not b.marked]
    assert not unmarked, ("shell blocks neither run nor exempted (add <!-- sample: ... --> on the "
                          "line above, see tests/docs/test_samples.py): " + ", ".join(unmarked))
    bare = []
    for page, path in pages():
        in_block = False
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = FENCE.match(line)
            if in_block:
                in_block = not CLOSE.match(line)
            elif m:
                in_block = True
                if not m["lang"]:
                    bare.append(f"{page}:{n}")
    assert not bare, f"fences without a language (sh, text, python...): {', '.join(bare)}"
