from setuptools import Extension, setup

setup(
    cffi_modules=["build_ffi.py:ffibuilder"],
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
            optional=True,
        )
    ],
)
