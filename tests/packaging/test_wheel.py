"""The distributable wheel: scripts/build-wheel.sh builds (or reuses, for the same sources)
one cp310-abi3 manylinux wheel carrying librdkafka, OpenSSL, zlib and zstd; it is installed
with --no-index into a fresh venv outside the source tree, and used there on the mock
cluster and on Tansu."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from helpers import wait_until

from rdk import Admin
from rdk.errors import KafkaError
from rdk.mock import TansuBroker, free_port

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().parent / "wheel_client.py"
# what a manylinux extension may need from the system: glibc's own libraries
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
         "ld-linux-x86-64.so.2", "linux-vdso.so.1"}
WHEEL_NAME = re.compile(r"rdk-(?P<version>[^-]+)-cp310-abi3-manylinux_2_(?P<glibc>\d+)_x86_64\.whl")

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64",
    reason="the wheel is built for Linux x86_64",
)


def pinned_librdkafka() -> str:
    text = (ROOT / "scripts" / "build-librdkafka.sh").read_text()
    return re.search(r"^LIBRDKAFKA_VERSION=(\S+)$", text, re.M).group(1)


def isolated_env() -> dict[str, str]:
    """The environment of the wheel's venv: no source tree on the path, no pip config."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


@pytest.fixture(scope="module")
def wheel() -> Path:
    """The wheel of the current sources (scripts/build-wheel.sh prints its path)."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build-wheel.sh")],
                           capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, f"build-wheel.sh failed:\n{built.stderr[-4000:]}"
    path = Path(built.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.parent == ROOT / "dist", path
    return path


def make_venv(python: str, wheel: Path, directory: Path) -> Path:
    """A fresh venv of ``python`` outside the source tree, the wheel installed from files only."""
    assert ROOT not in directory.parents
    subprocess.run([python, "-m", "venv", str(directory)], check=True, timeout=300)
    install = subprocess.run(
        [str(directory / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
         "--find-links", str(ROOT / "dist" / "wheelhouse"), str(wheel)],
        capture_output=True, text=True, env=isolated_env(), cwd=directory.parent, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    return directory


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """The wheel installed for the Python running the tests."""
    return make_venv(sys.executable, wheel, tmp_path_factory.mktemp("wheel-venv") / "venv")


def other_cpythons() -> dict[str, str]:
    """{"3.X": interpreter} of the CPythons >= 3.10 (GIL builds) on this machine besides ours."""
    candidates = [f"/usr/bin/python3.{minor}" for minor in range(10, 20)]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(str(p) for p in pyenv.glob("versions/3.*/bin/python3"))
    found: dict[str, str] = {}
    probe = ("import sys, sysconfig; print('%d.%d' % sys.version_info[:2], sys.implementation.name, "
             "sysconfig.get_config_var('Py_GIL_DISABLED') or 0)")
    for python in candidates:
        if not os.access(python, os.X_OK):
            continue
        answer = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
        if answer.returncode != 0:
            continue
        version, implementation, free_threaded = answer.stdout.split()
        if (implementation == "cpython" and free_threaded == "0"
                and tuple(map(int, version.split("."))) >= (3, 10)
                and version != f"{sys.version_info[0]}.{sys.version_info[1]}"):
            found.setdefault(version, python)
    return found


OTHER_CPYTHONS = other_cpythons() if sys.platform == "linux" else {}


def run_in(venv: Path, *args: str, cwd: Path) -> str:
    done = subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True,
                          env=isolated_env(), cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def installed_extensions(venv: Path) -> list[Path]:
    found = sorted(venv.glob("lib/python*/site-packages/rdk/*.so"))
    assert {p.name for p in found} == {"_rdkafka.abi3.so", "_messages.abi3.so"}, found
    return found


def test_wheel_is_one_abi3_manylinux_wheel_for_cpython_3_10_and_later(wheel):
    name = WHEEL_NAME.fullmatch(wheel.name)
    assert name, wheel.name
    libc, glibc = platform.libc_ver()
    assert libc == "glibc"
    assert int(name["glibc"]) <= int(glibc.split(".")[1]), "tag promises an older glibc than built on"
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        info = f"rdk-{name['version']}.dist-info"
        tags = [line for line in whl.read(f"{info}/WHEEL").decode().splitlines() if line.startswith("Tag:")]
        metadata = whl.read(f"{info}/METADATA").decode()
    assert tags == [f"Tag: cp310-abi3-manylinux_2_{name['glibc']}_x86_64"]
    assert "Requires-Python: >=3.10" in metadata.splitlines()
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines()
              if line.startswith("Provides-Extra:")}
    assert {"spark", "arrow", "brokers"} <= extras
    assert {"rdk/_rdkafka.abi3.so", "rdk/_messages.abi3.so", "rdk/py.typed"} <= names
    # nothing of the build: no C sources, no grafted shared libraries (all is static)
    assert not [n for n in names if n.endswith((".c", ".o")) or ".libs/" in n]


def test_wheel_extensions_use_only_the_stable_abi_of_cpython_3_10(wheel):
    audit = subprocess.run([str(ROOT / "build" / "wheel-tools" / "bin" / "abi3audit"), "--strict",
                            "--summary", str(wheel)], capture_output=True, text=True, timeout=300)
    report = " ".join(audit.stdout.split() + audit.stderr.split())
    assert audit.returncode == 0, report
    assert "2 extensions scanned; 0 ABI version mismatches and 0 ABI violations found" in report, report


def test_wheel_carries_the_licences_of_everything_linked_into_it(wheel):
    with zipfile.ZipFile(wheel) as whl:
        def text(name: str) -> str:
            return whl.read(f"rdk/bundled_licenses/{name}").decode()

        index = text("README")
        assert f"librdkafka {pinned_librdkafka()}: librdkafka.a" in index
        for archive in ("libssl.a", "libcrypto.a", "libzstd.a", "libz.a"):
            assert f": {archive}" in index, index
        assert "Magnus Edenhill" in text("librdkafka-LICENSE")
        bundled = text("librdkafka-LICENSES.txt")
        assert "LICENSE.lz4" in bundled and "LICENSE.snappy" in bundled  # code librdkafka carries
        assert "Upstream-Name: OpenSSL" in text("libssl-dev-copyright")
        assert "Upstream-Name: Zstd" in text("libzstd-dev-copyright")
        assert "Jean-loup Gailly" in text("zlib1g-dev-copyright")


def test_installed_extensions_need_no_library_outside_glibc_and_export_only_their_init(venv):
    for extension in installed_extensions(venv):
        dynamic = subprocess.run(["readelf", "-d", str(extension)], capture_output=True, text=True,
                                 check=True).stdout
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
        assert needed and needed <= GLIBC, f"{extension.name} needs {needed - GLIBC}"
        assert "RPATH" not in dynamic and "RUNPATH" not in dynamic, dynamic
        ldd = subprocess.run(["ldd", str(extension)], capture_output=True, text=True, check=True).stdout
        resolved = {line.split()[0].rsplit("/", 1)[-1] for line in ldd.splitlines() if line.strip()}
        assert "not found" not in ldd and resolved <= GLIBC, ldd
        # librdkafka's, OpenSSL's, zlib's and zstd's symbols stay private to the module
        exported = subprocess.run(["nm", "-D", "--defined-only", str(extension)], capture_output=True,
                                  text=True, check=True).stdout.split()[2::3]
        assert exported == [f"PyInit_{extension.name.split('.')[0]}"], exported


def round_trip(venv: Path, tmp_path: Path, *args: str) -> dict:
    result = json.loads(run_in(venv, "python", str(CLIENT), *args, cwd=tmp_path).splitlines()[-1])
    assert Path(result["rdk_file"]).is_relative_to(venv), result["rdk_file"]
    assert result["librdkafka"] == pinned_librdkafka()
    assert result["fast_path"], "rdk._messages (the C fast path) did not load from the wheel"
    return result


def test_wheel_round_trips_every_codec_on_the_mock_cluster(venv, tmp_path):
    result = round_trip(venv, tmp_path, "mock")
    assert result["got"] == result["sent"]
    assert [count for count, _ in result["got"].values()] == [200] * 5


def test_wheel_round_trips_every_codec_on_tansu(venv, tmp_path, tansu, new_topic):
    topic = new_topic(tansu, 5, prefix="wheel")
    result = round_trip(venv, tmp_path, tansu.bootstrap_servers, topic)
    assert result["got"] == result["sent"]
    assert [count for count, _ in result["got"].values()] == [200] * 5


def test_wheel_round_trips_over_tls_with_its_own_static_openssl(venv, tmp_path):
    from reliability.tls import Pki, Stunnel, stunnel_binary

    if stunnel_binary() is None:
        pytest.skip("stunnel4 is not installed (apt-get install stunnel4)")
    pki = Pki(tmp_path / "ca")
    plain_port, tls_port = free_port(), free_port()
    bootstrap = f"127.0.0.1:{tls_port}"
    with contextlib.ExitStack() as stack:
        # Tansu speaks plaintext behind stunnel and tells clients to use the TLS port
        stack.callback(TansuBroker(port=plain_port, advertised_port=tls_port, wait=False).close)
        stunnel = Stunnel(tls_port, plain_port, pki.issue("server"))
        stack.callback(stunnel.close)
        options = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca.cert), "log_level": 0}

        def created() -> bool:
            try:
                with Admin(bootstrap, options) as admin:
                    admin.create_topics({"wheel-tls": 5}, exist_ok=True)
                return True
            except KafkaError:
                return False

        wait_until(created, 30, what="the TLS listener to serve CreateTopics")
        result = round_trip(venv, tmp_path, bootstrap, "wheel-tls", str(pki.ca.cert))
        assert result["got"] == result["sent"]
        assert [count for count, _ in result["got"].values()] == [200] * 5
        assert "s_connect: connected" in stunnel.output()


@pytest.mark.parametrize("version", sorted(OTHER_CPYTHONS) or [
    pytest.param("none", marks=pytest.mark.skip(reason="no other CPython >= 3.10 on this machine"))])
def test_the_same_wheel_round_trips_on_every_other_cpython_here(wheel, version, tmp_path):
    venv = make_venv(OTHER_CPYTHONS[version], wheel, tmp_path / f"venv-{version}")
    result = round_trip(venv, tmp_path, "mock")
    assert result["got"] == result["sent"]
    assert f"/python{version}/site-packages/rdk/" in result["rdk_file"]


def test_rdk_version_from_the_wheel_names_the_bundled_librdkafka_and_features(venv, tmp_path):
    out = run_in(venv, "rdk", "version", cwd=tmp_path)
    pinned = pinned_librdkafka()
    assert f"librdkafka {pinned} (built against {pinned})" in out
    features = set(re.search(r"features: (.*)", out).group(1).split(", "))
    assert {"ssl", "sasl_scram", "gzip", "zstd", "lz4", "snappy"} <= features


def test_sdist_carries_the_build_inputs_and_no_build_outputs(wheel):
    sdist = next((ROOT / "dist").glob("rdk-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"build_ffi.py", "setup.py", "pyproject.toml", "scripts/build-librdkafka.sh",
            "include/rdk_librdkafka.h", "include/rdk_structs.h", "src/rdk/_helpers.c",
            "src/rdk/_messages.c", "src/rdk/py.typed"} <= names
    assert not [n for n in names if n.endswith((".so", ".o")) or n == "src/rdk/_rdkafka.c"]


def test_sdist_without_librdkafka_stops_with_a_clear_error(wheel, tmp_path):
    sdist = next((ROOT / "dist").glob("rdk-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (source,) = tmp_path.iterdir()
    env = isolated_env()
    env.pop("RDK_LIBRDKAFKA_PREFIX", None)
    env["PKG_CONFIG_PATH"] = env["PKG_CONFIG_LIBDIR"] = str(tmp_path / "no-pkgconfig")  # no system one
    done = subprocess.run([sys.executable, "build_ffi.py"], capture_output=True, text=True, cwd=source,
                          env=env, timeout=120)
    assert done.returncode != 0
    assert "librdkafka >= 2.10 not found" in done.stderr
    assert "RDK_LIBRDKAFKA_PREFIX" in done.stderr and "scripts/build-librdkafka.sh" in done.stderr
