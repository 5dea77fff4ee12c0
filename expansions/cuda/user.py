"""The C++ API for users' own CUDA kernels (``user.cuh``, ``expansions::Expansion<T, R>``): where the
header is, its self-contained text, and compilation with the library's options.

    import expansions.cuda.user as U
    code = U.source() + my_kernel_code            # or '#include "user.cuh"' with -I U.include_dir()
    module = U.load(code, ["my_kernel"])          # a cupy.RawModule, compiled for the current GPU
    module.get_function("my_kernel")((blocks,), (threads,), (terms, out, n))

:func:`compile` needs only NVRTC (no GPU).  CuPy's ``RawKernel``/``RawModule(code=...)`` also work for
double terms with ``options=("-I" + include_dir(), "--std=c++17")``; for float terms they cannot,
because CuPy adds ``-ftz=true`` (the header then stops the compilation with a static_assert).
The guide with a complete example: ``docs/cuda_api.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from . import build

HEADER = "user.cuh"


def include_dir() -> Path:
    """The folder that holds ``user.cuh`` and the headers it includes (for ``-I``)."""
    return build.CUDA_DIR


def source() -> str:
    """``user.cuh`` with every header it includes inlined: paste it in front of a kernel."""
    return build.source(HEADER)


#: The NVRTC options the header is written for (``compile`` and ``load`` use them).
OPTIONS = build.OPTIONS


def compile(code: str, names, arch: str = "sm_90"):  # noqa: A001 - the verb users expect here
    """Compile ``code`` (which includes the header's text or ``#include "user.cuh"``) with the library's
    options for ``arch``, no GPU needed.  ``names``: the kernels' name expressions (e.g.
    ``"leibniz<4>"`` for a template).  Returns ``(cubin, {name: lowered name}, log)``."""
    return build.compile_source(_inline(code), names, arch, verbose=False, filename="user_kernels.cu")


def load(code: str, names, device_id: int | None = None):
    """Compile ``code`` for a GPU (the current one by default) and load it: a ``cupy.RawModule``
    whose ``get_function(name)`` gives each kernel of ``names`` (name expressions are mapped to
    their lowered names).  CUBINs are cached in :func:`expansions.cuda.build.cache_dir`."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    dev = cupy.cuda.Device() if device_id is None else cupy.cuda.Device(device_id)
    arch = build.device_arch(dev.id)
    names = list(dict.fromkeys(names))
    text = _inline(code)
    key = hashlib.sha256("\0".join([text, *OPTIONS, arch, str(build.nvrtc_version()), *names]).encode())
    folder = build.cache_dir()
    path, table = (folder / f"user_{key.hexdigest()[:32]}{ext}" for ext in (".cubin", ".json"))
    if not (path.exists() and table.exists()):
        binary, lowered, _ = build.compile_source(text, names, arch, verbose=False, filename="user_kernels.cu")
        folder.mkdir(parents=True, exist_ok=True)
        path.write_bytes(binary)
        table.write_text(json.dumps(lowered))
    lowered = json.loads(table.read_text())
    with dev:
        module = cupy.RawModule(path=str(path))
    return _Module(module, lowered)


class _Module:
    """A loaded module of users' kernels: ``get_function`` takes the name expression."""

    def __init__(self, module, lowered):
        self.module, self.lowered = module, lowered

    def get_function(self, name: str):
        return self.module.get_function(self.lowered.get(name, name))


def _inline(code: str) -> str:
    """``#include "user.cuh"`` replaced by the header's text (NVRTC then needs no include path)."""
    return re.sub(rf'^[ \t]*#include[ \t]+"{re.escape(HEADER)}"[^\n]*$', lambda _: source(), code, flags=re.M)
