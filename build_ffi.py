"""CFFI out-of-line (API-mode) build of rdk._rdkafka.

cdef = the headers in include/, in a fixed order; set_source compiles rdk's C
helpers (src/rdk/_helpers.c, which #includes include/rdk_structs.h: the structs are
written once, for the cdef and the compiler alike) and links librdkafka, found in this
order:

1. RDK_LIBRDKAFKA_PREFIX (a prefix with include/librdkafka and lib/),
2. the project-local prefix .deps/librdkafka (scripts/build-librdkafka.sh),
3. pkg-config rdkafka, if it is >= 2.10,

else a clear error saying what to run. A prefix's static librdkafka.a is linked
into the extension with its symbols kept private (-Wl,--exclude-libs,ALL), so
rdk can share a process with another librdkafka copy (confluent-kafka's).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
INCLUDE = HERE / "include"
# rdk_structs.h after librdkafka's handle types it names, before the helpers that take it
HEADERS = ["rdk_librdkafka.h", "rdk_mock.h", "rdk_structs.h", "rdk_helpers.h"]
MIN_VERSION = (2, 10, 0)
EXTRA_CDEF = """
#define RDK_BUILT_AGAINST ...
"""


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split(".")[:3])


def _locate_librdkafka() -> dict:
    candidates = []
    if os.environ.get("RDK_LIBRDKAFKA_PREFIX"):
        candidates.append(pathlib.Path(os.environ["RDK_LIBRDKAFKA_PREFIX"]))
    candidates.append(HERE / ".deps" / "librdkafka")
    for prefix in candidates:
        static = prefix / "lib" / "librdkafka.a"
        if (prefix / "include" / "librdkafka" / "rdkafka.h").exists() and static.exists():
            return {
                "include_dirs": [str(prefix / "include")],
                "extra_objects": [str(static)],
                "libraries": ["ssl", "crypto", "z", "zstd", "m", "dl", "pthread", "rt"],
                "extra_link_args": ["-Wl,--exclude-libs,ALL"],
            }
    if shutil.which("pkg-config"):
        probe = subprocess.run(
            ["pkg-config", "--modversion", "rdkafka"], capture_output=True, text=True
        )
        if probe.returncode == 0 and _version_tuple(probe.stdout) >= MIN_VERSION:
            cflags = subprocess.run(
                ["pkg-config", "--cflags-only-I", "rdkafka"], capture_output=True, text=True
            ).stdout.split()
            libdir = subprocess.run(
                ["pkg-config", "--variable=libdir", "rdkafka"], capture_output=True, text=True
            ).stdout.strip()
            return {
                "include_dirs": [flag[2:] for flag in cflags],
                "libraries": ["rdkafka"],
                "library_dirs": [libdir] if libdir else [],
                "extra_link_args": [f"-Wl,-rpath,{libdir}"] if libdir else [],
            }
    raise SystemExit(
        "rdk: librdkafka >= 2.10 not found. Run scripts/build-librdkafka.sh "
        "(builds the pinned 2.12.0 into .deps/librdkafka), or set "
        "RDK_LIBRDKAFKA_PREFIX to a prefix holding include/librdkafka and lib/librdkafka.a."
    )


ffibuilder = FFI()
ffibuilder.cdef("\n".join((INCLUDE / name).read_text() for name in HEADERS) + EXTRA_CDEF)
_build = _locate_librdkafka()
_build["include_dirs"] = [str(INCLUDE), *_build["include_dirs"]]  # for rdk_structs.h
ffibuilder.set_source(
    "rdk._rdkafka",
    '#define RDK_BUILT_AGAINST RD_KAFKA_VERSION\n'
    + (HERE / "src" / "rdk" / "_helpers.c").read_text(),
    extra_compile_args=["-O2", "-Wall", "-Wno-unused-function"],
    **_build,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
