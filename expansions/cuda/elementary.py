"""The table of the elementary-function kernels (``elementary.cuh``), built from the twins' constants.

One array of terms per (R, dtype) holds everything the kernels read besides their operands: the
constants of :mod:`expansions.cpu.constants` (exactly generated, rounded to W = working_terms(R)
terms), the logarithm's plan (:func:`expansions.cpu.elementary.log_plan`) with its table of the
centres' logarithms and the atanh coefficients at W terms, the Payne–Hanek table of 2/pi at
M = min(2W + 2, 32) terms, the Taylor coefficients and evaluation plans (s, n) of
:func:`expansions.cpu.elementary._exp_plan` and ``_sin_plan`` for every width the kernels use (W and
the Newton steps' 2, 4, 8, ...), and the branch thresholds of
:func:`expansions.cpu.elementary.thresholds`.  Small integers (offsets, plans) are stored as terms,
exactly.  The layout is the ``H_*`` / ``P_*`` indices of ``elementary.cuh``; nothing there is typed in.
The launchers (:mod:`expansions.cuda.launch`) pass the table, copied once per device, as the last
kernel argument.
"""

from __future__ import annotations

import functools

import numpy as np

from ..cpu import constants as C
from ..cpu import elementary as E
from ..formats import MAX_TERMS, format_of

#: Constants at W terms, in the order of ``enum Constant`` (elementary.cuh).
CONSTANTS = ("ln2", "inv_ln2", "inv_ln10", "pi", "half_pi", "quarter_pi", "three_quarter_pi")
#: Thresholds at header entries 8.. (``H_EXP_LO`` ...), keys of :func:`expansions.cpu.elementary.thresholds`.
THRESHOLDS = ("exp_lo", "exp_hi", "hyp_limit", "sqrt2", "quarter_pi", "pi", "half_pi", "three_quarter_pi")
#: The logarithm's plan at header entries 16.. (``H_LOG_B`` ...): b, the first centre's index, the
#: series' terms n, the offsets of the centres' logs (rows of W terms), of the atanh coefficients (n rows
#: of W terms) and of the Horner steps' widths (n entries), the number of centres:
#: :func:`expansions.cpu.elementary.log_plan`.
HEADER_LOG = 16
HEADER_PLANS = 24
PLAN_STRIDE = 8
HEADER = HEADER_PLANS + PLAN_STRIDE * (MAX_TERMS + 1)


def widths(W: int) -> list:
    """The numbers of terms at which the kernels evaluate the Taylor series: W and the Newton steps."""
    return sorted(set(E._newton_widths(W)) | {W})


@functools.cache
def table(R: int, dtype) -> np.ndarray:
    """The table of the kernels of R terms of ``dtype`` (read-only NumPy array)."""
    dt = np.dtype(dtype)
    fmt = format_of(dt)
    W = E.working_terms(R)
    M = min(2 * W + 2, MAX_TERMS)
    S = C.shift_of(fmt)
    ph = C.two_over_pi_table(M, dt.name)
    header = np.zeros(HEADER, dtype=dt)
    parts = [header]
    size = HEADER

    def put(a) -> int:
        nonlocal size
        a = np.ascontiguousarray(a, dtype=dt).ravel()
        parts.append(a)
        size += a.size
        return size - a.size

    header[0:4] = (W, M, S, ph.shape[0])
    header[4] = put(np.concatenate([C.constant(name, W, dt.name) for name in CONSTANTS], axis=1))
    header[5] = put(C.constant("two_over_pi", M, dt.name, S))
    header[6] = put(C.constant("half_pi", M, dt.name))
    header[7] = put(ph)
    th = E.thresholds(dt)
    header[8 : 8 + len(THRESHOLDS)] = [th[k] for k in THRESHOLDS]
    lp = E.log_plan(W, fmt)
    header[HEADER_LOG : HEADER_LOG + 3] = (lp.b, lp.first, lp.n)
    header[HEADER_LOG + 3] = put(C.log_centres(lp.b, lp.first, lp.count, W, dt.name))
    header[HEADER_LOG + 4] = put(C.atanh_coefficients(lp.n, W, dt.name))
    header[HEADER_LOG + 5] = put(np.array(lp.widths))
    header[HEADER_LOG + 6] = lp.count
    for w in widths(W):
        es, en = E._exp_plan(w, fmt)
        ss, sn = E._sin_plan(w, fmt)
        base = HEADER_PLANS + PLAN_STRIDE * w
        header[base : base + 2] = (es, en)
        header[base + 2] = put(C.taylor("expm1", en, w, dt.name))
        header[base + 3 : base + 5] = (ss, sn)
        header[base + 5] = put(C.taylor("sin", sn, w, dt.name))
        header[base + 6] = put(C.taylor("versin", sn, w, dt.name))
    out = np.concatenate(parts)
    if dt == np.float32:
        assert size < 2**24, "offsets must be exact float32 integers"
    out.setflags(write=False)
    return out


_DEVICE_TABLES: dict = {}


def device_table(R: int, dtype):
    """:func:`table` as a CuPy array on the current device (copied once per device, R and dtype)."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    key = (cupy.cuda.Device().id, R, np.dtype(dtype).name)
    if key not in _DEVICE_TABLES:
        _DEVICE_TABLES[key] = cupy.asarray(table(R, dtype))
    return _DEVICE_TABLES[key]
