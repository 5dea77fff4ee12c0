"""GPU backend: CUDA C++ templates (``*.cuh``, ``kernels.cu``) compiled with NVRTC and launched from
CuPy.  Importing this package never needs CuPy; :func:`available` says whether kernels can run.

* :mod:`expansions.cuda.build`: the table of kernel instances, NVRTC compilation (no GPU needed)
  and the memoized per-device loader;
* :mod:`expansions.cuda.launch`: launchers with the signatures of the CPU twins
  (:mod:`expansions.cpu.kernels`), on 2-D CuPy arrays;
* :mod:`expansions.cuda.user`: the C++ API for users' own kernels (``user.cuh``,
  ``expansions::Expansion<T, R>``; docs/cuda_api.md).
"""

from __future__ import annotations


def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy  # optional dependency: CuPy is needed only on the GPU path
    except Exception:
        return False
    try:
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def device_name(device_id: int | None = None) -> str:
    """Name of a CUDA device (default: CuPy's current device), e.g. ``'NVIDIA H100 80GB HBM3'``."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    dev = cupy.cuda.Device() if device_id is None else cupy.cuda.Device(device_id)
    name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


__all__ = ["available", "device_name"]
