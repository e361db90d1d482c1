"""``import rdk`` loads no client; each public name is loaded on first use (PEP 562), and a
Spark Python worker's ``import rdk.spark.reader`` loads the reading side only.

Which modules an import loads is the claim (read from ``python -X importtime`` of a fresh
interpreter); how long it takes is measured by bench/spark_bench.py, not here."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rdk

CLIENT_MODULES = {"rdk._binding", "rdk._rdkafka", "rdk.producer", "rdk.consumer", "rdk.admin",
                  "rdk.share", "rdk.offsets", "rdk.transactions", "rdk.aio", "rdk.workers"}


def imported_by(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport sys\nprint(' '.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=True)
    return set(result.stdout.split())


def import_times(code: str) -> dict[str, int]:
    """Per module, the microseconds ``python -X importtime`` reports for ``code``."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                            capture_output=True, text=True, timeout=120, check=True)
    rows = [line.split("|") for line in result.stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2]
    return {name.strip(): int(cumulative) for _, cumulative, name in rows[1:]}


def test_import_rdk_loads_no_client_module():
    loaded = imported_by("import rdk")
    ours = {m for m in loaded if m == "rdk" or m.startswith("rdk.")}
    assert ours == {"rdk", "rdk._exit", "rdk.errors"}, ours
    assert "_cffi_backend" not in loaded
    # -X importtime agrees: rdk's own imports are those two modules
    times = import_times("import rdk")
    assert {m for m in times if m.startswith("rdk")} == {"rdk", "rdk._exit", "rdk.errors"}


@pytest.mark.parametrize("name", rdk.__all__)
def test_every_public_name_resolves_and_stays_in_dir(name):
    value = getattr(rdk, name)
    assert value is not None and name in dir(rdk)
    if isinstance(value, type) or callable(value):
        assert value.__module__.startswith("rdk")


def test_first_use_loads_only_what_it_names():
    loaded = imported_by("import rdk; rdk.Message")
    assert not loaded & CLIENT_MODULES, loaded & CLIENT_MODULES
    loaded = imported_by("import rdk; rdk.Producer")
    assert {"rdk._binding", "rdk.producer"} <= loaded
    assert not loaded & {"rdk.consumer", "rdk.admin", "rdk.share", "rdk.aio"}


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'rdk' has no attribute 'Prodcer'"):
        rdk.Prodcer  # noqa: B018


def test_star_import_gives_every_public_name():
    namespace: dict = {}
    exec("from rdk import *", namespace)
    assert set(rdk.__all__) <= set(namespace)


def test_a_spark_worker_reading_loads_the_reading_side_only():
    pytest.importorskip("pyspark")
    loaded = imported_by("import rdk.spark.reader")
    driver_or_writer = {"rdk.spark.writer", "rdk.spark.stream_writer", "rdk.spark._exactly_once",
                        "rdk.spark.source", "rdk.spark.stream",
                        "rdk.producer", "rdk.consumer", "rdk.admin", "rdk.share"}
    assert not loaded & driver_or_writer, loaded & driver_or_writer
    assert {"rdk.spark.reader", "rdk._binding"} <= loaded
