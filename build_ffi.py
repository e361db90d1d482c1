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

RDK_STATIC_DEPS=1 (set by scripts/build-wheel.sh) also links librdkafka's own
dependencies statically from their .a archives (OpenSSL, zlib, zstd; librdkafka
carries its lz4), so the extension needs nothing beyond glibc at run time; their
licences are then listed by bundled_licenses() and shipped in the wheel
(setup.py copies them to rdk/bundled_licenses/).
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
# rdk.ShareConsumer (KIP-932): its struct, then the share API, callbacks and helpers
HEADERS += ["rdk_share_structs.h", "rdk_share.h"]
MIN_VERSION = (2, 10, 0)
EXTRA_CDEF = """
#define RDK_BUILT_AGAINST ...
"""


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split(".")[:3])


# librdkafka's dependencies, in link order (a library before the ones it uses)
DEPENDENCIES = ["ssl", "crypto", "zstd", "z"]
GLIBC_LIBRARIES = ["m", "dl", "pthread", "rt"]


def static_deps_requested() -> bool:
    """True when RDK_STATIC_DEPS asks for librdkafka's dependencies to be linked statically."""
    return os.environ.get("RDK_STATIC_DEPS", "") not in ("", "0")


def _static_archive(name: str) -> pathlib.Path:
    """The path of lib<name>.a as the C compiler's linker would find it."""
    compiler = os.environ.get("CC", "cc").split()[0]
    found = subprocess.run(
        [compiler, f"-print-file-name=lib{name}.a"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(found) or not os.path.exists(found):
        raise SystemExit(
            f"rdk: RDK_STATIC_DEPS=1 needs the static archive lib{name}.a, which {compiler} "
            "does not find (Debian: apt-get install libssl-dev zlib1g-dev libzstd-dev)."
        )
    return pathlib.Path(found).resolve()


def _linked_from_prefix(prefix: pathlib.Path) -> dict:
    archives = [prefix / "lib" / "librdkafka.a"]
    libraries = list(GLIBC_LIBRARIES)
    link_args = ["-Wl,--exclude-libs,ALL"]
    if static_deps_requested():
        archives += [_static_archive(name) for name in DEPENDENCIES]
        link_args.append("-Wl,--strip-debug")  # a shipped wheel: 7 MB instead of 19
    else:
        libraries = DEPENDENCIES + libraries
    return {
        "include_dirs": [str(prefix / "include")],
        "extra_objects": [str(path) for path in archives],
        "libraries": libraries,
        "extra_link_args": link_args,
        "prefix": prefix,
    }


def _locate_librdkafka() -> dict:
    candidates = []
    if os.environ.get("RDK_LIBRDKAFKA_PREFIX"):
        candidates.append(pathlib.Path(os.environ["RDK_LIBRDKAFKA_PREFIX"]))
    candidates.append(HERE / ".deps" / "librdkafka")
    for prefix in candidates:
        static = prefix / "lib" / "librdkafka.a"
        if (prefix / "include" / "librdkafka" / "rdkafka.h").exists() and static.exists():
            return _linked_from_prefix(prefix)
    if static_deps_requested():
        raise SystemExit(
            "rdk: RDK_STATIC_DEPS=1 needs a static librdkafka: set RDK_LIBRDKAFKA_PREFIX to a "
            "prefix holding include/librdkafka and lib/librdkafka.a (scripts/build-librdkafka.sh)."
        )
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
        "(builds the pinned 2.15.1 into .deps/librdkafka), or set "
        "RDK_LIBRDKAFKA_PREFIX to a prefix holding include/librdkafka and lib/librdkafka.a."
    )


def _debian_package(archive: pathlib.Path) -> tuple[str, str]:
    """(name, version) of the Debian package that installed ``archive``."""
    owner = None
    if shutil.which("dpkg-query"):
        owner = subprocess.run(["dpkg-query", "-S", str(archive)], capture_output=True, text=True)
    if owner is None or owner.returncode != 0:
        raise SystemExit(f"rdk: cannot tell which package installed {archive}, so cannot ship "
                         "its licence; bundle it by hand or build without RDK_STATIC_DEPS.")
    package = owner.stdout.split(":", 1)[0].strip()
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                             capture_output=True, text=True).stdout.strip()
    return package, version


def _librdkafka_version(prefix: pathlib.Path) -> str:
    pc = prefix / "lib" / "pkgconfig" / "rdkafka.pc"
    for line in pc.read_text().splitlines() if pc.exists() else []:
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return "(version unknown)"


def bundled_licenses(build: dict) -> tuple[dict[str, pathlib.Path], list[str]]:
    """The licences of the code linked into the extension, and what that code is.

    Returns ({file name in the wheel: source file}, [one line per bundled component]):
    librdkafka's LICENSE and LICENSES.txt (the code it carries: lz4, cJSON, ...) when it
    comes from a prefix, and with RDK_STATIC_DEPS the Debian copyright file of the package
    of each static archive. Missing files are an error only with RDK_STATIC_DEPS (a wheel).
    """
    prefix = build.get("prefix")
    if prefix is None:
        return {}, []
    found = {f"librdkafka-{name}": prefix / name for name in ("LICENSE", "LICENSES.txt")}
    components = [f"librdkafka {_librdkafka_version(prefix)}: librdkafka.a"]
    missing = [str(path) for path in found.values() if not path.exists()]
    if missing and static_deps_requested():
        raise SystemExit(f"rdk: librdkafka's licence files are missing: {', '.join(missing)} "
                         "(scripts/build-librdkafka.sh installs them into the prefix)")
    found = {name: path for name, path in found.items() if path.exists()}
    if static_deps_requested():
        for archive in build["extra_objects"][1:]:
            package, version = _debian_package(pathlib.Path(archive))
            copyright_file = pathlib.Path("/usr/share/doc", package, "copyright")
            if not copyright_file.exists():
                raise SystemExit(f"rdk: {copyright_file} (the licence of {archive}) is missing")
            found[f"{package}-copyright"] = copyright_file
            components.append(f"{package} {version}: {pathlib.Path(archive).name}")
    return found, components


ffibuilder = FFI()
ffibuilder.cdef("\n".join((INCLUDE / name).read_text() for name in HEADERS) + EXTRA_CDEF)
_build = _locate_librdkafka()
LICENSES, BUNDLED = bundled_licenses(_build)
_build.pop("prefix", None)
_build["include_dirs"] = [str(INCLUDE), *_build["include_dirs"]]  # for rdk_structs.h
ffibuilder.set_source(
    "rdk._rdkafka",
    '#define RDK_BUILT_AGAINST RD_KAFKA_VERSION\n'
    + (HERE / "src" / "rdk" / "_helpers.c").read_text()
    + "\n" + (HERE / "src" / "rdk" / "_share.c").read_text(),
    extra_compile_args=["-O2", "-Wall", "-Wno-unused-function"],
    **_build,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
