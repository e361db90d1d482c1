"""setuptools glue: the CFFI module (build_ffi.py), the stable-ABI _messages extension, the
abi3 wheel tag (one wheel for CPython >= 3.10) and the licences of what the build links in.

scripts/build-wheel.sh builds the distributable wheel; see README "Installing the wheel".
"""

import pathlib
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
LICENSE_DIR = "bundled_licenses"  # inside the rdk package of a built (non-editable) wheel


class BuildExtWithLicences(build_ext):
    """build_ext that also puts the licences of the code linked into the extension (librdkafka,
    and with RDK_STATIC_DEPS OpenSSL, zlib, zstd) next to it, as rdk/bundled_licenses/."""

    def run(self) -> None:
        super().run()
        if self.inplace or getattr(self, "editable_mode", False):
            return  # a development install: nothing is shipped
        sys.path.insert(0, str(HERE))
        try:
            import build_ffi  # the same location logic the cffi build used
        finally:
            sys.path.pop(0)
        if not build_ffi.LICENSES:
            return
        target = pathlib.Path(self.build_lib) / "rdk" / LICENSE_DIR
        target.mkdir(parents=True, exist_ok=True)
        for name, source in build_ffi.LICENSES.items():
            self.copy_file(str(source), str(target / name))
        index = target / "README"
        index.write_text(
            "Linked statically into rdk/_rdkafka.abi3.so, each under the licence in this directory:\n"
            + "".join(f"- {line}\n" for line in build_ffi.BUNDLED)
        )


setup(
    cffi_modules=["build_ffi.py:ffibuilder"],
    cmdclass={"build_ext": BuildExtWithLicences},
    # The consumer's C fast path from batch buffers to Message tuples (CPython stable ABI;
    # optional: without it rdk.consumer uses an equivalent pure-Python path).
    ext_modules=[
        Extension(
            "rdk._messages",
            ["src/rdk/_messages.c"],
            include_dirs=["include"],  # rdk_structs.h: the rdk_batch it reads
            depends=["include/rdk_structs.h"],
            py_limited_api=True,
            extra_compile_args=["-O2", "-Wall"],
            # it calls nothing in libc itself; naming libc lets auditwheel see the glibc it runs on
            extra_link_args=["-Wl,--no-as-needed", "-lc"],
            optional=True,
        )
    ],
    # both extensions use the stable ABI of 3.10 (_messages.c defines Py_LIMITED_API 0x030A0000,
    # CFFI's module the 3.2 one): one cp310-abi3 wheel serves every CPython >= 3.10
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
