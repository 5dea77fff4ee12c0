"""The parts of the GPU runbook's stages (``tools/gpu_run.py``): what each runs on the GPU, the kernels it
compiles (:mod:`gpu_compile` units), its time estimate, and its result file.

Each part is a function of a :class:`Context` (the result folder, the deadline, the device) that writes
one JSON file ``OUT/<part>.json`` as it goes (:meth:`Context.save`: a stage stopped at its limit still
returns what was done), with a ``status`` (``passed``, ``failed``, ``measured``, ``partial``,
``skipped``, ``error``) and a few ``summary`` lines that the stage prints at its end.

The device is :class:`Gpu` on a GPU machine and :class:`Rehearsal` without one (``--rehearse``): the
CUDA calls replaced, as ``tests/test_gpu_runbook.py`` does, by the NumPy twins for the kernels (the
bit-exactness comparisons then compare the twins with the compiled engine, which CI already does) and
by records marked ``rehearsal`` without figures for the timings.  A rehearsal runs every part end to end
and writes every file, at ``scale`` times the sizes; its figures mean nothing and say so.

Estimates (:func:`estimate`): for each part, its CPU side as measured here without a GPU
(``tools/gpu_budget/cpu.json``, written by ``python tools/gpu_run.py --measure-cpu``), its device
side from the instruction model's bound of each kernel (``bench/results/model_sm90.json``, H100 SXM)
and the sizes used, and the fixed costs below, which nothing here can measure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(ROOT / "tools")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from gpu_compile import Unit, kernel_unit  # noqa: E402 - after the path set-up above

BUDGET = ROOT / "tools" / "gpu_budget"
MODEL_JSON = ROOT / "bench" / "results" / "model_sm90.json"
MODEL_DEVICE = "H100 SXM"

#: Fixed costs of the estimates, in seconds, that cannot be measured without a GPU (assumptions, kept
#: on the generous side): CUDA context creation and CuPy's first calls; loading one CUBIN; one launch
#: with its synchronization; host <-> device bytes per second (pageable memory over PCIe).
CUDA_INIT_S = 3.0
MODULE_LOAD_S = 0.02
LAUNCH_S = 30e-6
TRANSFER_BPS = 10e9
#: CuPy's own kernels (a comparison, ``isfinite``) compiled on first use by CuPy, each.
CUPY_KERNEL_S = 1.5
#: Seconds a part keeps in hand before the deadline to write its file.
RESERVE_S = 5.0


# ---------------------------------------------------------------------------------------------
# Context and devices


@dataclass
class Context:
    """What a part runs with: the result folder, the absolute deadline (``time.time()``), the device,
    the size scale (1 on a GPU; a rehearsal may use less)."""

    out: Path
    deadline: float
    device: object
    scale: float = 1.0

    def left(self) -> float:
        return self.deadline - time.time()

    def save(self, name: str, record: dict) -> None:
        """Write ``OUT/<name>.json`` atomically (the part's file, rewritten as the part goes)."""
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.out / f".{name}.json.tmp"
        tmp.write_text(json.dumps(record, indent=1, default=_json_default) + "\n")
        os.replace(tmp, self.out / f"{name}.json")

    def size(self, n: int, least: int = 8) -> int:
        return max(least, int(n * self.scale))


def _json_default(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


class Gpu:
    """The GPU through CuPy and the library's launchers."""

    rehearsal = False
    label = "GPU"

    def __init__(self):
        import cupy  # optional dependency: present on the GPU machine

        from expansions import backends

        self.cp = cupy
        self.backend = backends.cuda

    def to_device(self, a):
        return self.cp.asarray(a)

    def to_host(self, a):
        return self.cp.asnumpy(a)

    def launcher(self, name: str):
        from expansions.cuda import launch

        return launch.LAUNCHERS[name]

    def dw_run(self, name, *operands):
        from expansions.cuda import dw_kernels

        return dw_kernels.run(name, *operands)

    def expansion(self, terms):
        """An ExpansionArray of ``terms`` (host) on the device."""
        import expansions as ex

        return ex.from_terms(terms).to_device("cuda")

    def time(self, fn, repeats: int) -> list[float]:
        from bench import gpu

        return gpu._time(fn, repeats)

    def facts(self) -> dict:
        from bench import gpu

        return gpu.device_facts()

    def synchronize(self):
        self.cp.cuda.get_current_stream().synchronize()

    def copy_bandwidth(self, nbytes: int = 1 << 30, repeats: int = 5) -> float:
        """Device-to-device copy (cudaMemcpy, no kernel to compile), bytes read and written per second."""
        cp = self.cp
        a = cp.empty(nbytes, dtype=cp.uint8)
        b = cp.empty_like(a)
        secs = self.time(lambda: b.data.copy_from_device(a.data, nbytes), repeats)
        return 2 * nbytes / statistics.median(secs)


class Rehearsal:
    """No GPU: the kernels replaced by their NumPy twins, timings by records without figures."""

    rehearsal = True
    label = "rehearsal (no GPU: the NumPy twins in place of the kernels, no timings)"

    def __init__(self, backend=None):
        from expansions import backends

        # the twins; the elementary functions on the engine's operations (their twins take seconds a call)
        self.backend = backend or dataclasses.replace(backends.cpu, elementary=backends.engine_backend().elementary)

    def to_device(self, a):
        return np.asarray(a)

    def to_host(self, a):
        return np.asarray(a)

    def launcher(self, name: str):
        from expansions.cuda import build

        module, _, fn = f"expansions.{build.OPERATIONS[name].twin}".rpartition(".")
        return getattr(__import__(module, fromlist=[fn]), fn)

    def dw_run(self, name, *operands):
        from expansions.dw import cpu as dw_twins

        cols = [c for a in operands for c in ((a[:, 0], a[:, 1]) if a.ndim == 2 else (a,))]
        hi, lo = getattr(dw_twins, name)(*cols)
        return np.stack([hi, lo], axis=1)

    def expansion(self, terms):
        import expansions as ex

        return ex.from_terms(terms)

    def time(self, fn, repeats: int) -> list[float]:
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out

    def facts(self) -> dict:
        from bench import model

        d = model.DEVICES[MODEL_DEVICE]
        return {"name": f"rehearsal ({MODEL_DEVICE} figures of bench.model)", "sms": d["sms"],
                "clock_khz": d["clock_hz"] / 1e3, "bandwidth_gbs": d["bandwidth_bytes_s"] / 1e9,
                "fp64_lanes_per_sm": 64, "fp32_lanes_per_sm": 128, "compute_capability": "9.0"}

    def synchronize(self):
        pass

    def copy_bandwidth(self, nbytes: int = 1 << 24, repeats: int = 3) -> float:
        return float("nan")

    @contextlib.contextmanager
    def installed(self):
        """The benchmark harnesses' GPU measurements replaced by records without figures (their
        callers' code runs as on a GPU)."""
        from bench import baselines_gpu, dw_gpu, gpu
        from paper_repro import seed004_gpu

        def fake(*args, **kwargs):
            return {"rehearsal": True, "note": "rehearsal: not measured"}

        saved = [(m, n, getattr(m, n)) for m, n in ((gpu, "measure"), (baselines_gpu, "measure"),
                                                     (dw_gpu, "measure"), (seed004_gpu, "measure"))]
        for m, n, _ in saved:
            setattr(m, n, fake)
        try:
            yield self
        finally:
            for m, n, v in saved:
                setattr(m, n, v)


def device(rehearse: bool):
    return Rehearsal() if rehearse else Gpu()


# ---------------------------------------------------------------------------------------------
# Parts


@dataclass(frozen=True)
class Part:
    """One part of a stage.  ``needs``: ``gpu`` (skipped, with the reason, when CuPy sees none and this
    is no rehearsal) or ``none``."""

    name: str
    stage: str
    doc: str
    run: Callable
    units: Callable = field(default=lambda: [])
    estimate: Callable = field(default=lambda budget: {"seconds": 0.0})
    needs: str = "gpu"


PARTS: dict = {}


def part(name, stage, doc, units=None, estimate=None, needs="gpu"):
    def register(fn):
        PARTS[name] = Part(name, stage, doc, fn, units or (lambda: []), estimate or (lambda b: {"seconds": 0.0}),
                           needs)
        return fn

    return register


def parts(stage: str) -> list[Part]:
    return [p for p in PARTS.values() if p.stage == stage]


def load_budget() -> dict:
    """The committed measurements: ``{"compile": tools/gpu_budget/compile.json, "cpu": cpu.json}``."""
    out = {}
    for key in ("compile", "cpu"):
        path = BUDGET / f"{key}.json"
        out[key] = json.loads(path.read_text()) if path.exists() else {}
    return out


@functools.cache
def model_bounds() -> dict:
    """{name expression: bound in Mop/s on the H100 SXM} of the committed instruction model."""
    if not MODEL_JSON.exists():
        return {}
    recs = json.loads(MODEL_JSON.read_text())["records"]
    return {r["kernel"]: r["bound"][MODEL_DEVICE]["mops"] for r in recs if "bound" in r}


def device_seconds(kernel: str, operations: float, fallback_mops: float = 50.0) -> float:
    """Seconds of ``operations`` operations of ``kernel`` at its modeled bound (an upper bound of its
    speed, so a lower bound of the time); kernels the model does not hold get ``fallback_mops``."""
    return operations / (model_bounds().get(kernel, fallback_mops) * 1e6)


def _process_start(budget) -> float:
    return budget.get("cpu", {}).get("process_start_seconds", 3.0)


def _cpu(budget, key, default=None):
    """A measured CPU figure of ``cpu.json`` (``default`` when not measured)."""
    return budget.get("cpu", {}).get(key, default)


def _same_rows(got, want):
    """Rows of ``got`` and ``want`` that agree: bit for bit, a NaN matching any NaN (the GPU's and the
    CPU's default NaN differ in sign and payload); signed zeros by their bits."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise ValueError(f"result shape/dtype {got.shape} {got.dtype}, CPU {want.shape} {want.dtype}")
    u = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}[want.dtype]
    g2, w2 = got.reshape(len(got), -1), want.reshape(len(want), -1)
    bits = g2.view(u) == w2.view(u)
    nan = np.isnan(g2) & np.isnan(w2)
    return (bits | nan).all(axis=1), ((~bits) & nan).any(axis=1)


def _hex(row) -> list[str]:
    return [float(v).hex() for v in np.asarray(row).reshape(-1)]


# ---------------------------------------------------------------------------------------------
# env (first)


def _tool_version(cmd) -> str:
    if shutil.which(cmd[0]) is None:
        return f"{cmd[0]}: not on the PATH"
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (p.stdout + p.stderr).strip()[-2000:]
    except Exception as exc:
        return f"{cmd[0]}: {type(exc).__name__}: {exc}"


def environment_record() -> dict:
    """Device, driver, CUDA, NVRTC, CuPy, NumPy, numba, Python, commit, CPUs, memory, tools."""
    from expansions.__main__ import environment

    env = environment()
    try:
        from expansions.cuda import build

        env["nvrtc"] = ".".join(map(str, build.nvrtc_version()))
        env["nvrtc_archs"] = list(build.supported_archs())
    except Exception as exc:
        env["nvrtc"] = f"unavailable: {type(exc).__name__}: {exc}"
    try:
        import numba

        env["numba"] = numba.__version__
    except ImportError:
        env["numba"] = "not installed"
    env["cpus"] = os.cpu_count()
    env["platform"] = platform.platform()
    with contextlib.suppress(OSError):
        env["memory_kb"] = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return env


def _units_none():
    return []


def _estimate_env(budget):
    return {"seconds": _process_start(budget) + 10.0, "detail": "nvidia-smi -q and the tools' versions (10 s)"}


@part("env", "first", "environment record: device, driver, CUDA, NVRTC, CuPy, NumPy, numba, commit, CPUs; "
      "nvidia-smi -q, lscpu and the versions of nvcc, compute-sanitizer, ncu", estimate=_estimate_env, needs="none")
def run_env(ctx: Context):
    rec = {"part": "env", "status": "measured", "environment": environment_record()}
    rec["tools"] = {name: _tool_version(cmd) for name, cmd in (
        ("nvidia-smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,"
                        "compute_cap", "--format=csv"]),
        ("nvcc", ["nvcc", "--version"]), ("compute-sanitizer", ["compute-sanitizer", "--version"]),
        ("ncu", ["ncu", "--version"]), ("uname", ["uname", "-a"]), ("lscpu", ["lscpu"]))}
    rec["nvidia_smi_q"] = _tool_version(["nvidia-smi", "-q"])[-12000:]
    env = rec["environment"]
    rec["summary"] = [f"{env.get('gpu_name', 'no GPU: ' + str(env.get('gpu_reason')))}, driver {env.get('driver')}, "
                      f"CUDA runtime {env.get('cuda_runtime')}, NVRTC {env.get('nvrtc')}, CuPy {env.get('cupy')}, "
                      f"NumPy {env.get('numpy')}, numba {env.get('numba')}, {env.get('cpus')} CPUs, commit "
                      f"{env.get('commit')}"]
    ctx.save("env", rec)


# ---------------------------------------------------------------------------------------------
# bitexact (first): every kernel family against the CPU, bit for bit


BITEXACT_RS = (2, 3, 4, 8, 16, 32)
DTYPES = ("float64", "float32")
#: Random operands per (family, R, dtype); the special and adversarial sets come on top.
BITEXACT_COUNT = 100_000
#: Rows of each special and adversarial set (tests/test_gpu.py's families other than "random").
SPECIAL_ROWS = 1024
#: Failing rows kept per (family, R, dtype) in the result file (inputs, GPU and CPU results, as hex).
KEEP_FAILURES = 8
#: Chunk size of the reductions' passes in the comparison (one kernel instance per R and dtype).
REDUCE_CHUNK = 64


def _tests_module(name: str):
    """A module of tests/ (the GPU tests' input families live there; importing needs pytest)."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return __import__(name)


def _sets(flavour: str, R: int, dtype: str, count: int, special: int, seed: int):
    """[(set name, x, y)]: tests/test_gpu.py's input families (random, ulp/zero/same sign, wide gaps,
    cancellation, Sterbenz, arbitrary floats, close magnitudes, NaN/Inf, overflow, underflow, signed
    zeros) for the operation ``flavour`` (its float64 product rules: no term below 2^-450, no underflow
    family), ``count`` random rows and ``special`` rows of each other family."""
    tg = _tests_module("test_gpu")
    out = []
    for k, name in enumerate(tg.FAMILIES):
        if tg._skip_family(name, flavour, dtype):
            continue
        x, y = tg.family(name, flavour, dtype, R, R, R, count if name == "random" else special, seed + 1000 * k)
        out.append((name, np.ascontiguousarray(x), np.ascontiguousarray(y)))
    return out


@dataclass(frozen=True)
class Family:
    """A kernel family of the comparison: ``inputs(R, dtype, count, special, seed)`` -> [(set, *arrays)],
    ``gpu(dev, R, *arrays)`` and ``cpu(R, *arrays)`` -> terms (host), ``units(R, dtype)``."""

    name: str
    inputs: Callable
    gpu: Callable
    cpu: Callable
    units: Callable
    rs: tuple = BITEXACT_RS
    doc: str = ""
    #: names of the result's column blocks (R columns each) when one row holds several results
    labels: Callable | None = None


def _engine():
    from expansions import backends

    return backends.engine_backend()


def _dispatch_family(name, op, alg, kernel, flavour, unary=False):
    from expansions import dispatch
    from expansions.cuda import build

    def inputs(R, dtype, count, special, seed):
        sets = _sets(flavour, R, dtype, count, special, seed)
        if op == "sqrt":  # radicands: nonnegative, but NaN/Inf and signed zeros as drawn, and a negative set
            sets = [(s, x if s in ("nonfinite", "signed_zeros") else np.where(x[:, :1] < 0, -x, x), y)
                    for s, x, y in sets] + [("negative", -np.abs(sets[0][1][:special]), sets[0][2][:special])]
        return [(s, x) for s, x, _ in sets] if unary else sets

    def gpu(dev, R, *arrays):
        return dev.to_host(dispatch.run(op, alg, dev.backend, True, *[dev.to_device(a) for a in arrays], R))

    def cpu(R, *arrays):
        return dispatch.run(op, alg, _engine(), True, *arrays, R)

    def units(R, dtype):
        return [kernel_unit(build.instance(kernel, dtype, R, renormalize=True))]

    return Family(name, inputs, gpu, cpu, units,
                  doc=f"dispatch.run({op!r}, {alg!r}, renormalize=True): the {kernel} instance the library launches")


def _plain_family(name, flavour, method):
    """renormalize / negate: the backend function on one operand."""
    from expansions.cuda import build

    def inputs(R, dtype, count, special, seed):
        return [(s, x) for s, x, _ in _sets(flavour, R, dtype, count, special, seed)]

    def gpu(dev, R, x):
        f = getattr(dev.backend, method)
        return dev.to_host(f(dev.to_device(x)) if method == "negate" else f(dev.to_device(x), R))

    def cpu(R, x):
        f = getattr(_engine(), method)
        return f(x) if method == "negate" else f(x, R)

    def units(R, dtype):
        return [kernel_unit(build.instance(name, dtype, R))]

    return Family(name, inputs, gpu, cpu, units, doc=f"backend.{method}")


def _reduce_family(name, dot):
    from expansions.cuda import build

    def inputs(R, dtype, count, special, seed):
        sets = _sets("mul_truncated" if dot else "add_safe", R, dtype, count, special, seed)
        return [(s, x, y) for s, x, y in sets] if dot else [(s, x) for s, x, _ in sets]

    def _shape(x):
        batch = 8
        n = x.shape[0] // batch
        return batch, n

    def gpu(dev, R, x, y=None):
        batch, n = _shape(x)
        kw = dict(n2=1, xs=(n, 0, 1), ys=(n, 0, 1), y=dev.to_device(y[:batch * n])) if dot else {}
        return dev.to_host(dev.backend.reduce(dev.to_device(x[:batch * n]), batch, n, R, chunk=REDUCE_CHUNK, **kw))

    def cpu(R, x, y=None):
        batch, n = _shape(x)
        kw = dict(n2=1, xs=(n, 0, 1), ys=(n, 0, 1), y=y[:batch * n]) if dot else {}
        return _engine().reduce(x[:batch * n], batch, n, R, chunk=REDUCE_CHUNK, **kw)

    def units(R, dtype):
        out = [kernel_unit(build.instance("reduce_sum", dtype, R, C=REDUCE_CHUNK))]
        return out + ([kernel_unit(build.instance("reduce_dot", dtype, R, C=REDUCE_CHUNK))] if dot else [])

    return Family(name, inputs, gpu, cpu, units, doc=f"backend.reduce{' with y (dot)' if dot else ''}, "
                  f"chunk {REDUCE_CHUNK}, 8 rows; the result rows (not the elements) are compared")


def _baseline_family(name):
    from expansions.baselines import BASELINES
    from expansions.cuda import build

    b = BASELINES[name]
    flavour = "mul_truncated" if b.operation == "mul" else "add_safe"

    def inputs(R, dtype, count, special, seed):
        return _sets(flavour, R, dtype, count, special, seed)

    def gpu(dev, R, x, y):
        f = dev.launcher(name)
        args = (dev.to_device(x), dev.to_device(y)) + (() if b.terms else (R,))
        return dev.to_host(f(*args))

    def cpu(R, x, y):
        from expansions.engine import baselines as engine_baselines

        return getattr(engine_baselines, name)(x, y, *(() if b.terms else (R,)))

    def units(R, dtype):
        return [kernel_unit(build.instance(name, dtype, R))]

    return Family(name, inputs, gpu, cpu, units, rs=(b.terms,) if b.terms else BITEXACT_RS,
                  doc=f"the sequential baseline {name} (AoS launcher)")


def _elementary_inputs(f, R, dtype, count, seed):
    """tests/test_elementary_emulated.py's domain of ``f`` (``count`` random rows) and its special values."""
    te = _tests_module("test_elementary_emulated")
    x, y = te.domain(f, count, R, dtype, np.random.default_rng(seed))
    sx, sy = te._specials(f, R, dtype)
    sets = [("domain", x) + (() if y is None else (y,)), ("specials", sx) + (() if sy is None else (sy,))]
    return [tuple([s] + [np.ascontiguousarray(a) for a in arrays]) for s, *arrays in sets]


def _elementary_family(fname):
    from expansions.cuda import build

    def inputs(R, dtype, count, special, seed):
        return _elementary_inputs(fname, R, dtype, count, seed)

    def gpu(dev, R, *arrays):
        return dev.to_host(dev.backend.elementary(fname)(*[dev.to_device(a) for a in arrays], R))

    def cpu(R, *arrays):
        return _engine().elementary(fname)(*arrays, R)

    def units(R, dtype):
        return [kernel_unit(build.instance(fname, dtype, R))]

    return Family(fname, inputs, gpu, cpu, units, doc=f"the elementary function {fname} (elementary.cuh), "
                  "on tests/test_elementary_emulated.py's domain and special values")


def _dw_family():
    """R = 2: every kernel of dw.cuh against its twin, and every dw_operation instance (the library's
    R = 2 operations) against the engine's composition."""
    from expansions import dispatch
    from expansions.cuda import dw_kernels
    from expansions.dw import ALGORITHMS

    def inputs(R, dtype, count, special, seed):
        return _sets("mul_truncated", 2, dtype, count, special, seed)

    def _cases(dtype):
        for name, kind in dw_kernels.library_algorithms().items():
            for op, renorm in ((("sqrt", False),) if kind == "sqrt" else
                               ((kind, False), (kind, True)) + ((("sub", True),) if kind == "add" else ())):
                yield name, op, renorm

    def gpu(dev, R, x, y):
        outs = []
        for name, op, renorm in _cases(x.dtype):
            ops = (np.where(x[:, :1] < 0, -x, x),) if op == "sqrt" else (x, y)
            outs.append(dev.to_host(dispatch.run(op, name, dev.backend, renorm, *[dev.to_device(a) for a in ops], 2)))
        for name in dw_kernels.KERNEL_ALGORITHMS:
            outs.append(dev.to_host(dev.dw_run(name, *[dev.to_device(a) for a in _dw_operands(name, x, y)])))
        return np.concatenate(outs, axis=1)

    def cpu(R, x, y):
        from expansions.dw import cpu as dw_twins

        outs = []
        for name, op, renorm in _cases(x.dtype):
            ops = (np.where(x[:, :1] < 0, -x, x),) if op == "sqrt" else (x, y)
            outs.append(dispatch.run(op, name, _engine(), renorm, *ops, 2))
        for name in dw_kernels.KERNEL_ALGORITHMS:
            ops = _dw_operands(name, x, y)
            cols = [c for a in ops for c in ((a[:, 0], a[:, 1]) if a.ndim == 2 else (a,))]
            hi, lo = getattr(dw_twins, name)(*cols)
            outs.append(np.stack([hi, lo], axis=1))
        return np.concatenate(outs, axis=1)

    def _dw_operands(name, x, y):
        kinds = ALGORITHMS[name].operands
        ops = [(x if i == 0 else y) if k == "dw" else np.ascontiguousarray((x if i == 0 else y)[:, 0])
               for i, k in enumerate(kinds)]
        return [np.abs(a) if name.endswith("sqrt") else a for a in ops]

    def labels():
        return ([f"dw_operation {name} {op} renormalize={renorm}" for name, op, renorm in _cases(None)]
                + [f"dw.cuh {name}" for name in dw_kernels.KERNEL_ALGORITHMS])

    return Family("dw", inputs, gpu, cpu, lambda R, dtype: [Unit("dw")], rs=(2,), labels=labels,
                  doc="R = 2: every dw_operation instance (the library's + - * / sqrt at R = 2, each algorithm of "
                      "R2_METHODS, with and without renormalization) against dispatch.run on the engine, and every "
                      "kernel of dw.cuh against its twin; one row of the result holds all of them")


#: Traced programs whose CUDA kernels the stages compile and launch: name -> function.
def _fma(x, y, z):
    return x * y + z


PROGRAMS = {"fma": _fma}


@functools.cache
def program_source(name: str, R: int, dtype: str) -> tuple[str, str]:
    """(kernel name, kernel text) of program ``name`` at R terms and ``dtype``, every input a full array:
    the text the CUDA plan generates (captured from :class:`expansions.programs.cuda.KernelPlan` run on
    NumPy arrays with a launch that records it; no GPU needed)."""
    import expansions as ex
    from expansions.generate import random_terms
    from expansions.programs import Program
    from expansions.programs import cuda as programs_cuda

    args = [ex.from_terms(random_terms((3,), R, dtype, seed=k)) for k in range(3)]
    graph, (_, items) = Program(PROGRAMS[name]).trace(*args)
    seen = []
    plan = programs_cuda.KernelPlan(graph, tuple(items), "cpu", lambda n, text, params, count: seen.append((n, text)))
    with np.errstate(all="ignore"):
        plan(args)
    return seen[0]


def _program_family(name):
    def inputs(R, dtype, count, special, seed):
        a = _sets("mul_truncated", R, dtype, count, special, seed)
        b = _sets("mul_truncated", R, dtype, count, special, seed + 77)
        return [(s, x, y, z) for (s, x, y), (_, z, _) in zip(a, b)]

    def gpu(dev, R, x, y, z):
        import expansions as ex

        out = ex.fuse(PROGRAMS[name])(*[dev.expansion(a) for a in (x, y, z)])
        return dev.to_host(out.terms)

    def cpu(R, x, y, z):
        import expansions as ex

        return ex.fuse(PROGRAMS[name])(*[ex.from_terms(a) for a in (x, y, z)]).terms

    return Family(f"fuse_{name}", inputs, gpu, cpu, lambda R, dtype: [Unit("program", (name, R, dtype))],
                  doc=f"expansions.fuse of {name} (x * y + z): one generated CUDA kernel, against the fused CPU plan")


@functools.cache
def families() -> tuple:
    """The kernel families of the comparison, most valuable first."""
    return (
        _dispatch_family("add_safe", "add", "safe", "add_safe", "add_safe"),
        _dispatch_family("mul_truncated", "mul", "truncated", "mul_truncated", "mul_truncated"),
        _dw_family(),
        _dispatch_family("add_fast", "add", "fast", "add_fast", "add_fast"),
        _dispatch_family("sub_safe", "sub", "safe", "sub_safe", "sub_safe"),
        _dispatch_family("sub_fast", "sub", "fast", "sub_fast", "sub_fast"),
        _plain_family("renormalize", "renormalize", "renormalize"),
        _dispatch_family("newton_div", "div", "newton", "newton_div", "mul_truncated"),
        _dispatch_family("newton_reciprocal", "reciprocal", "newton", "newton_reciprocal", "mul_truncated", unary=True),
        _dispatch_family("newton_sqrt", "sqrt", "newton", "newton_sqrt", "mul_truncated", unary=True),
        _reduce_family("reduce_sum", dot=False),
        _reduce_family("reduce_dot", dot=True),
        _program_family("fma"),
        _plain_family("negate", "add_safe", "negate"),
        _elementary_family("exp"),
        _baseline_family("certified_add"),
        _baseline_family("certified_mul"),
        *(_baseline_family(n) for n in ("dd_add_ieee", "dd_add_sloppy", "dd_mul", "qd_add_ieee", "qd_add_sloppy",
                                         "qd_mul")),
    )


def bitexact_configs():
    """(family, R, dtype) in the order of the comparison."""
    for fam in families():
        for dtype in DTYPES:
            for R in fam.rs:
                yield fam, R, dtype


def family(name: str) -> Family:
    """A family of the comparison by name (an elementary function's name gives its family)."""
    for fam in families():
        if fam.name == name:
            return fam
    return _elementary_family(name)


def random_rows(fam: Family, R: int) -> int:
    """Random operands of one (family, R, dtype) comparison: :data:`BITEXACT_COUNT`, except where the
    family says fewer (:data:`EXP_ROWS`)."""
    return EXP_ROWS.get(R, BITEXACT_COUNT) if fam.name == "exp" else BITEXACT_COUNT


#: Random operands of the exponential's comparison at large R: its CPU reference (the twin's algorithm
#: on the engine's operations) takes about 6 ms per argument at R = 32 on this project's CPU machine
#: (630 s for 10^5); 10^5 at R = 8, 16, 32 is the third stage's (``bitexact_exp``, in chunks).
EXP_ROWS = {8: 10_000, 16: 2_000, 32: 1_000}


def _units_bitexact():
    return [u for fam, R, dtype in bitexact_configs() for u in fam.units(R, dtype)] + _numba_units(
        [fam.name for fam in families()])


def _numba_units(names, per_dtype: bool = False) -> list:
    """The compile-pool units that fill numba's cache with the engine code a family's CPU side runs;
    ``per_dtype``: one unit per term dtype (two processes of the pool at once, for the units whose
    compile would otherwise be the longest of the stage: the compiled elementary functions)."""
    if per_dtype:
        return [Unit("numba", (n, d)) for n in names for d in DTYPES]
    return [Unit("numba", (n,)) for n in names]


def warm_engine(name: str, dtype: str | None = None) -> None:
    """Run family ``name``'s CPU side on a few rows of ``dtype`` (default: every dtype): numba compiles
    the engine code it needs and caches it on disk (the compile pool's ``numba`` units; the parts' processes then load
    it).  ``elementary``: the engine's operations the elementary functions run on
    (:class:`expansions.cpu.elementary.Arithmetic`: the safe addition, the truncated multiplication,
    the renormalization, the Newton division and square root), each called once per dtype, and the
    compiled elementary functions (:mod:`expansions.engine.elementary`, one specialization per dtype
    for all of them)."""
    from expansions.generate import random_terms

    with np.errstate(all="ignore"):
        if name == "elementary":
            from expansions import engine

            e = _engine()
            for dt in [dtype] if dtype else DTYPES:
                x, y = (random_terms((4,), 2, dt, seed=k) for k in (1, 2))
                e.renormalize(e.add_safe(x, y, 2), 2)
                e.mul_truncated(x, y, 2)
                e.newton_div(x, y, 2)
                e.newton_sqrt(np.abs(x), 2)
                # the compiled elementary functions: one specialization per dtype for all of them
                engine.compiled_elementary("exp")(x, 2)
            return
        fam = family(name)
        for dt in [dtype] if dtype else DTYPES:
            bitexact_cpu_side(fam, fam.rs[0], dt, 4, 2)


def bitexact_cpu_side(fam: Family, R: int, dtype: str, count: int, special: int, chunk: int = 0) -> tuple:
    """The CPU side of one comparison (what the budget measures): its input sets, the arrays, the CPU's
    result and the seconds the CPU took to compute it.  ``chunk``: one of several comparisons of the
    same (family, R, dtype) on other random operands."""
    seed = 7919 * R + (0 if dtype == "float64" else 1) + 1_000_003 * chunk
    sets = fam.inputs(R, dtype, count, special, seed)
    arrays = [np.ascontiguousarray(np.concatenate([s[k] for s in sets])) for k in range(1, len(sets[0]))]
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        want = fam.cpu(R, *arrays)
    return sets, arrays, want, time.perf_counter() - t0


def _cpu_job(args) -> dict:
    """A worker of the CPU pool: one comparison's CPU side, its arrays saved in ``folder`` (.npy)."""
    name, R, dtype, count, special, chunk, folder = args
    t0 = time.perf_counter()
    sets, arrays, want, ref = bitexact_cpu_side(family(name), R, dtype, count, special, chunk)
    stem = Path(folder) / f"{name}-{R}-{dtype}-{chunk}"
    paths = []
    for k, a in enumerate(arrays + [want]):
        paths.append(f"{stem}-{k}.npy")
        np.save(paths[-1], a)
    return {"family": name, "R": R, "dtype": dtype, "chunk": chunk, "sets": [(s[0], len(s[1])) for s in sets],
            "paths": paths,
            "cpu_seconds": round(time.perf_counter() - t0, 3), "reference_seconds": round(ref, 3),
            "reference_threads": int(os.environ.get("NUMBA_NUM_THREADS", "0")) or None}


@contextlib.contextmanager
def cpu_pool(jobs: int):
    """A pool of ``jobs`` spawned processes for the CPU sides, the engine single-threaded in each (the
    processes share the machine's cores), and a scratch folder for their arrays."""
    import multiprocessing
    import tempfile

    saved = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        with tempfile.TemporaryDirectory(prefix="expansions-cpu-") as tmp, \
                multiprocessing.get_context("spawn").Pool(jobs) as pool:
            yield pool, tmp
    finally:
        if saved is None:
            os.environ.pop("NUMBA_NUM_THREADS", None)
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved


def cpu_jobs() -> int:
    """Processes of the CPU pool: every core but one (the one that drives the GPU)."""
    return max(1, (os.cpu_count() or 2) - 1)


def compare(dev, fam: Family, R: int, dtype: str, count: int, special: int) -> dict:
    """One (family, R, dtype), CPU side in this process (see :func:`compare_prepared`)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="expansions-cpu-") as tmp:
        return compare_prepared(dev, fam, _cpu_job((fam.name, R, dtype, count, special, 0, tmp)))


def compare_prepared(dev, fam: Family, job: dict) -> dict:
    """One (family, R, dtype): the device's result against the CPU's (``job``: :func:`_cpu_job`'s), bit
    for bit; the first failing rows with their inputs, as hex (material for emulator tests)."""
    R, dtype = job["R"], job["dtype"]
    loaded = [np.load(p) for p in job["paths"]]
    for p in job["paths"]:
        os.unlink(p)
    arrays, want = loaded[:-1], loaded[-1]
    t1 = time.perf_counter()
    with np.errstate(all="ignore"):
        got = fam.gpu(dev, R, *arrays)
    t2 = time.perf_counter()
    same, nan_only = _same_rows(got, want)
    bounds = np.cumsum([0] + [n for _, n in job["sets"]])
    if fam.name.startswith("reduce"):  # result rows are the 8 reductions, not the elements
        bounds = np.array([0, len(want)])
        names = ["all sets, 8 rows"]
    else:
        names = [s for s, _ in job["sets"]]
    bad = np.flatnonzero(~same)
    rec = {"family": fam.name, "R": R, "dtype": dtype, "chunk": job.get("chunk", 0), "rows": int(len(want)),
           "operands": int(sum(n for _, n in job["sets"])), "sets": names, "mismatches": int(bad.size),
           "nan_payload_only_rows": int(nan_only.sum()), "cpu_seconds": job["cpu_seconds"],
           "reference_seconds": job["reference_seconds"], "device_seconds": round(t2 - t1, 3)}
    if bad.size:
        rec["mismatches_by_set"] = {names[k]: int(((bad >= bounds[k]) & (bad < bounds[k + 1])).sum())
                                    for k in range(len(names)) if ((bad >= bounds[k]) & (bad < bounds[k + 1])).any()}
        rec["failures"] = [{"row": int(i), "inputs": [_hex(a[i]) for a in arrays] if len(want) == len(arrays[0])
                            else "reduction: see the family's inputs", "gpu": _hex(got[i]), "cpu": _hex(want[i])}
                           for i in bad[:KEEP_FAILURES]]
        if fam.labels is not None:  # which of the results held in a row differ
            blocks = ~_same_rows(got.reshape(len(got), -1, R).transpose(1, 0, 2).reshape(-1, R),
                                 want.reshape(len(want), -1, R).transpose(1, 0, 2).reshape(-1, R))[0]
            blocks = blocks.reshape(-1, len(got)).any(axis=1)
            rec["mismatching_results"] = [lb for lb, b in zip(fam.labels(), blocks) if b]
    return rec


def _pool_estimate(seconds, jobs) -> float:
    from gpu_compile import lpt_makespan

    return lpt_makespan(seconds, jobs)


#: Processes of the CPU pool on the GPU machine (16 cores, one drives the GPU).
GPU_MACHINE_CPU_JOBS = 15


def _estimate_bitexact(budget):
    measured = _cpu(budget, "bitexact", {})
    secs, missing, device, loads, nbytes = [], [], 0.0, 0, 0.0
    for fam, R, dtype in bitexact_configs():
        key = f"{fam.name} {R} {dtype}"
        if key in measured:
            secs.append(measured[key])
        else:
            missing.append(key)
        rows = random_rows(fam, R) + 10 * SPECIAL_ROWS
        item = 8 if dtype == "float64" else 4
        nbytes += 4 * rows * R * item  # up to three operands in, one result out
        loads += len(fam.units(R, dtype))
        device += sum(device_seconds(u.key[0], rows) for u in fam.units(R, dtype) if u.kind == "kernels")
    transfer = 2 * nbytes / TRANSFER_BPS + nbytes / 1e9  # to and from the device; the workers' .npy files
    launches = 40 * len(secs) * LAUNCH_S
    wall = _pool_estimate(secs, GPU_MACHINE_CPU_JOBS)
    total = (_process_start(budget) + CUDA_INIT_S + _process_start(budget) + wall + transfer + device + launches
             + loads * MODULE_LOAD_S)
    return {"seconds": round(total, 1), "cpu": round(sum(secs), 1), "device": round(device + transfer + launches, 1),
            "missing": missing, "detail": f"{len(list(bitexact_configs()))} (family, R, dtype), "
            f"{BITEXACT_COUNT} random rows (exp: {EXP_ROWS} at large R) + {SPECIAL_ROWS} per special set; CPU sides "
            f"measured here one thread each ({sum(secs):.0f} s in all), on {GPU_MACHINE_CPU_JOBS} processes "
            f"longest first: {wall:.0f} s; transfers {transfer:.1f} s"}


@part("bitexact", "first", "every kernel family against the CPU (the engine, or the twins for the dw.cuh kernels), "
      "bit for bit (a NaN matches any NaN), per R in {2, 3, 4, 8, 16, 32}, float64 and float32, on 10^5 random "
      "operands plus tests/test_gpu.py's special and adversarial sets; failing operands kept",
      units=_units_bitexact, estimate=_estimate_bitexact)
def run_bitexact(ctx: Context):
    configs = list(bitexact_configs())
    order = _cpu(load_budget(), "bitexact", {})
    configs.sort(key=lambda c: -order.get(f"{c[0].name} {c[1]} {c[2]}", 0.0))  # longest first (the pool's plan)
    special = ctx.size(SPECIAL_ROWS, 4)
    run_comparisons(ctx, "bitexact", [(fam.name, R, dtype, ctx.size(random_rows(fam, R)), special, 0)
                                      for fam, R, dtype in configs])


def run_comparisons(ctx: Context, name: str, jobs: list):
    """Comparisons (family, R, dtype, random rows, special rows, chunk), their CPU sides on the pool, the
    device's results compared as the CPU sides come back; ``OUT/<name>.json``."""
    dev = ctx.device
    rec = {"part": name, "device": dev.label, "status": "partial", "results": [], "errors": []}
    with cpu_pool(1 if dev.rehearsal else cpu_jobs()) as (pool, tmp):
        results = pool.imap_unordered(_cpu_job_safe, [job + (tmp,) for job in jobs])
        for k in range(len(jobs)):
            try:
                job = results.next(timeout=max(0.1, ctx.left() - RESERVE_S))
            except Exception as exc:  # the deadline (multiprocessing.TimeoutError) or a worker lost
                rec["stopped"] = f"{type(exc).__name__}: {len(jobs) - k} of {len(jobs)} comparisons not run"
                pool.terminate()
                break
            if "error" in job:
                rec["errors"].append(job)
            else:
                try:
                    rec["results"].append(compare_prepared(dev, family(job["family"]), job))
                except Exception as exc:
                    rec["errors"].append({"family": job["family"], "R": job["R"], "dtype": job["dtype"],
                                          "error": f"{type(exc).__name__}: {exc}"})
            _bitexact_summary(rec, len(jobs))
            ctx.save(name, rec)
    if "stopped" not in rec:
        rec["status"] = "failed" if rec["errors"] or any(r["mismatches"] for r in rec["results"]) else "passed"
    _bitexact_summary(rec, len(jobs))
    ctx.save(name, rec)


def _cpu_job_safe(args) -> dict:
    try:
        return _cpu_job(args)
    except Exception as exc:
        return {"family": args[0], "R": args[1], "dtype": args[2], "error": f"CPU side: {type(exc).__name__}: {exc}"}


def _bitexact_summary(rec, total):
    res = rec["results"]
    bad = [r for r in res if r["mismatches"]]
    lines = [f"{len(res)} of {total} comparisons (family, R, dtype) done, {sum(r['rows'] for r in res)} result rows: "
             f"{len(bad)} with mismatches, {len(rec['errors'])} errors"]
    lines += [f"MISMATCH {r['family']} R={r['R']} {r['dtype']}: {r['mismatches']} rows "
              f"{r.get('mismatches_by_set', {})}" for r in bad[:12]]
    lines += [f"ERROR {e['family']} R={e['R']} {e['dtype']}: {e['error'][:200]}" for e in rec["errors"][:6]]
    nan = sum(r["nan_payload_only_rows"] for r in res)
    if nan:
        lines.append(f"{nan} rows differ only in NaN sign/payload (counted as equal)")
    rec["summary"] = lines


# ---------------------------------------------------------------------------------------------
# tables (first): Tables I-IV, quick


def _table_jobs():
    from paper_repro import collange2016 as C

    return [(t, R, a) for t, (op, _) in C.TABLES.items() for R in C.RS for a in C.ALGORITHMS[op]]


def _units_tables():
    from bench import baselines_gpu, gpu
    from paper_repro import collange2016 as C

    out = []
    for table, R, alg in _table_jobs():
        op, scenario = C.TABLES[table]
        kind = "best" if scenario == "best" else "shmem"
        if (op, alg) in gpu.OPS:
            out.append(Unit("bench", (gpu.name_expression(kind, op, alg, "float64", R),)))
        elif baselines_gpu.functor(op, alg, R) is not None:
            out.append(Unit("bench", (baselines_gpu.name_expression(kind, op, alg, "float64", R),)))
    return out


def _bench_shapes(sms: int = 132):
    from bench import gpu

    return gpu.shapes(sms)


def _estimate_tables(budget):
    from bench import baselines_gpu, gpu
    from expansions.formats import group_width
    from paper_repro import collange2016 as C

    per_term = _cpu(budget, "random_terms_seconds_per_term", 1e-7)
    shapes = _bench_shapes()
    cpu = device = 0.0
    launches = 0
    generated = set()
    for table, R, alg in _table_jobs():
        op, scenario = C.TABLES[table]
        par = (op, alg) in gpu.OPS
        if not par and baselines_gpu.functor(op, alg, R) is None:
            continue
        repeats, K = (3, 4) if par else (3, 2)
        W = group_width(R) if par else 1
        counts = [b * t // W for b, t in shapes]
        if (par, R) not in generated:  # the operands of the largest shape, drawn once (bench.gpu.operands)
            cpu += 2 * max(counts) * R * per_term
            generated.add((par, R))
        kind = "best" if scenario == "best" else "shmem"
        name = (gpu.name_expression(kind, op, alg, "float64", R) if par
                else baselines_gpu.name_expression(kind, op, alg, "float64", R))
        best = (gpu.name_expression("best", op, alg, "float64", R) if par
                else baselines_gpu.name_expression("best", op, alg, "float64", R))
        for c in counts:
            # the model bounds the best case; the shared-memory scenario runs at most that fast
            device += device_seconds(name if name in model_bounds() else best, c * K * (repeats + 2))
            nbytes = 3 * c * R * 8
            device += nbytes / TRANSFER_BPS
            launches += repeats + 2
    total = _process_start(budget) + CUDA_INIT_S + cpu + device + launches * LAUNCH_S
    return {"seconds": round(total, 1), "cpu": round(cpu, 1), "device": round(device, 1),
            "detail": f"{len(_table_jobs())} records x {len(shapes)} launch shapes (paper_repro --quick sizes); "
                      f"operands drawn once per (R, kind) ({cpu:.0f} s at the measured rate), kernels at the model's "
                      "bound, transfers"}


@part("tables", "first", "Tables I-IV of Collange et al. 2016 in their quick form (paper_repro.collange2016, "
      "quick): best case and 256 B of shared memory per term, R = 2..32, beside the K40 figures and the model's bound",
      units=_units_tables, estimate=_estimate_tables)
def run_tables(ctx: Context):
    from paper_repro import collange2016 as C

    rec = {"part": "tables", "device": ctx.device.label, "status": "partial"}
    ctx.save("tables", rec)
    records = C.measure(True, "cuda", progress=False)
    label = ctx.device.facts()["name"]
    rec.update(status="measured", records=records, markdown=C.markdown(records, label),
               aims=C.aims(records, []))
    best = [r for r in records if r["scenario"] == "best" and r.get("mops")]
    rec["summary"] = [f"{len([r for r in records if r.get('mops')])} of {len(records)} cells measured"]
    for r in best:
        if r["R"] in (2, 8, 32) and r["algorithm"] in ("safe", "parallel"):
            rec["summary"].append(f"Table {r['table']} {r['algorithm']} R={r['R']}: {r['mops']:.4g} Mop/s, "
                                  f"{r.get('ratio_to_k40', float('nan')):.3g}x the K40")
    ctx.save("tables", rec)


# ---------------------------------------------------------------------------------------------
# r2 (first): the double-word add and mul beside CCCL fpmp


def _r2_methods():
    from bench import dw_gpu

    return [(op, name) for op, name in dw_gpu.METHODS if op in ("add", "mul")]


def _units_r2():
    from bench import dw_gpu

    return [Unit("bench", (dw_gpu.name_expression(name, "float64"),)) for _, name in _r2_methods()]


def _estimate_r2(budget):
    from bench import dw_gpu

    shapes = _bench_shapes()
    per_number = _cpu(budget, "dw_inputs_seconds_per_number", 2e-7)
    cpu = device = 0.0
    for _, name in _r2_methods():
        for b, t in shapes:
            c = b * t
            cpu += c * per_number
            device += device_seconds(dw_gpu.name_expression(name, "float64"), c * 4 * 5) + 2 * c * 16 / TRANSFER_BPS
    total = _process_start(budget) + CUDA_INIT_S + 2 * CUPY_KERNEL_S + cpu + device
    return {"seconds": round(total, 1), "cpu": round(cpu, 1), "device": round(device, 1),
            "detail": f"{len(_r2_methods())} algorithms x {len(shapes)} launch shapes (bench.dw_gpu --quick)"}


@part("r2", "first", "R = 2 double-word addition and multiplication throughput (bench.dw_gpu, quick, float64, every "
      "algorithm of R2_METHODS) beside CCCL fpmp's figures and the model's bound", units=_units_r2,
      estimate=_estimate_r2)
def run_r2(ctx: Context):
    from bench import dw_gpu, model

    rec = {"part": "r2", "device": ctx.device.label, "status": "partial", "fpmp": model.FPMP, "records": []}
    bounds = model_bounds()
    for op, name in _r2_methods():
        if ctx.left() < RESERVE_S:
            rec["stopped"] = "deadline"
            break
        r = dw_gpu.measure(name, "float64", quick=True) | {"operation": op, "algorithm": name}
        kernel = dw_gpu.name_expression(name, "float64")
        r["model_bound_tops"] = bounds.get(kernel, 0) / 1e6 or None
        r["fpmp_h100_tops"] = model.FPMP["h100_equivalent_tops"][op]
        if r.get("mops"):
            r["tops"] = r["mops"] / 1e6
            r["over_fpmp"] = r["tops"] / r["fpmp_h100_tops"]
            r["over_bound"] = r["tops"] / r["model_bound_tops"] if r["model_bound_tops"] else None
        rec["records"].append(r)
        ctx.save("r2", rec)
    rec["status"] = "measured" if "stopped" not in rec else "partial"
    rec["summary"] = [f"{r['operation']} {r['algorithm']}: " + (
        f"{r['tops']:.3g} Tops/s = {r['over_fpmp']:.2f} x fpmp ({r['fpmp_h100_tops']} Tops/s H100-equiv.), "
        f"{r['over_bound'] or float('nan'):.2f} of the model's bound" if r.get("tops")
        else r.get("note", "not measured")) for r in rec["records"]]
    ctx.save("r2", rec)


# ---------------------------------------------------------------------------------------------
# stream (first): the fused x*y+z beside the memory bandwidth


STREAM_RS = (2, 4, 8)
#: Expansions per streaming call (operands drawn for 2^20 and tiled: the values do not matter to the
#: bandwidth, the size does: 4 arrays of 2^24 x R terms).
STREAM_COUNT = 1 << 24
STREAM_DRAWN = 1 << 20
STREAM_REPEATS = 7


def _units_stream():
    return [Unit("program", ("fma", R, "float64")) for R in STREAM_RS]


def _estimate_stream(budget):
    per_term = _cpu(budget, "random_terms_seconds_per_term", 1e-7)
    cpu = sum(3 * STREAM_DRAWN * R * per_term for R in STREAM_RS)
    tile = sum(3 * STREAM_COUNT * R * 8 for R in STREAM_RS) / 2e9  # np.tile at about 2 GB/s
    nbytes = sum(3 * STREAM_COUNT * R * 8 for R in STREAM_RS)
    device = sum(2 * (STREAM_REPEATS + 2) * 4 * STREAM_COUNT * R * 8 / 3.0e12 for R in STREAM_RS) + 0.5
    total = _process_start(budget) + CUDA_INIT_S + cpu + tile + nbytes / TRANSFER_BPS + device
    return {"seconds": round(total, 1), "cpu": round(cpu + tile, 1), "device": round(nbytes / TRANSFER_BPS + device, 1),
            "detail": f"x*y+z fused and op by op, R in {STREAM_RS}, 2^24 expansions, {STREAM_REPEATS} repeats"}


@part("stream", "first", "the fused x*y+z (expansions.fuse: one kernel) streaming 2^24 float64 expansions, R = 2, 4, "
      "8, in GB/s beside the HBM bandwidth (nominal and a measured device copy); the same op by op",
      units=_units_stream, estimate=_estimate_stream)
def run_stream(ctx: Context):
    import expansions as ex
    from expansions.generate import random_terms

    dev = ctx.device
    facts = dev.facts()
    rec = {"part": "stream", "device": dev.label, "status": "partial", "facts": facts, "records": []}
    rec["copy_gbs"] = dev.copy_bandwidth() / 1e9
    count = ctx.size(STREAM_COUNT, 1024)
    drawn = min(count, ctx.size(STREAM_DRAWN, 1024))
    fused = ex.fuse(_fma)
    for R in STREAM_RS:
        if ctx.left() < RESERVE_S:
            rec["stopped"] = "deadline"
            break
        arrays = []
        for k in range(3):
            t = random_terms((drawn,), R, "float64", seed=k + 1, min_exponent=-450)
            arrays.append(dev.expansion(np.tile(t, (-(-count // drawn), 1))[:count]))
        nbytes = 4 * count * R * 8  # three inputs read, one output written
        row = {"R": R, "expansions": count, "bytes_per_call": nbytes}
        calls = (("fused", lambda a=arrays: fused(*a)), ("op_by_op", lambda a=arrays: a[0] * a[1] + a[2]))
        for label, fn in calls:
            secs = dev.time(fn, STREAM_REPEATS)
            t = statistics.median(secs)
            row[label] = {"seconds": secs, "gbs": nbytes / t / 1e9, "mops": count / t / 1e6}
            if facts.get("bandwidth_gbs") and not dev.rehearsal:
                row[label]["fraction_of_bandwidth"] = row[label]["gbs"] / facts["bandwidth_gbs"]
                row[label]["fraction_of_copy"] = row[label]["gbs"] / rec["copy_gbs"]
        rec["records"].append(row)
        ctx.save("stream", rec)
        arrays = calls = None  # free the device memory before the next R
    rec["status"] = "measured" if "stopped" not in rec else "partial"
    rec["summary"] = [f"device copy {rec['copy_gbs']:.4g} GB/s; nominal {facts.get('bandwidth_gbs') or 0:.4g} GB/s"]
    for r in rec["records"]:
        f = r["fused"]
        rec["summary"].append(f"x*y+z R={r['R']}: fused {f['gbs']:.4g} GB/s ({f.get('fraction_of_bandwidth', 0):.2f} "
                              f"of nominal), op by op {r['op_by_op']['gbs']:.4g} GB/s"
                              + (" (rehearsal: CPU timings)" if dev.rehearsal else ""))
    ctx.save("stream", rec)


# ---------------------------------------------------------------------------------------------
# model (second): the instruction model's bound beside the measured Mop/s, per cell


#: Seconds the model part may spend measuring (cells in order of value until their estimates fill it).
MODEL_CAP_S = 45.0
#: Expansions per launch of a library kernel (operands drawn for 2^16 and tiled) and repeats.
MODEL_STREAM_COUNT = 1 << 22
MODEL_DRAWN = 1 << 16
MODEL_REPEATS = 5


@functools.cache
def model_cells() -> tuple:
    """The modeled cells of the committed model, in order of value: the instances the library launches
    (renormalizing, group kernels) in float64, the paper's benchmark kernels (Tables I and III), the R =
    2 double-word kernels, then float32, the raw kernels, the baselines."""
    if not MODEL_JSON.exists():
        return ()
    recs = [r for r in json.loads(MODEL_JSON.read_text())["records"] if "bound" in r]

    def rank(r):
        lib = r["source"] == "library"
        return (r["dtype"] != "float64", not (lib and r.get("renormalize")), not (r["source"] == "bench"
                and r.get("mapping") == "group"), not r.get("double_word"), r["mapping"] == "thread", r["R"])

    return tuple(sorted(recs, key=rank))


#: The operand generation rate the model part's plan assumes (seconds per term, about what
#: ``--measure-cpu`` measured here: 3.4e-7; the estimate uses the measured one): a constant, so that the
#: cells chosen, and the kernels compiled, do not move with a remeasurement.
PLAN_SECONDS_PER_TERM = 3.5e-7


def _cell_cost(cell, budget) -> float:
    """Estimated seconds to measure one cell (operands, transfers, launches at the bound); ``budget``
    None: the plan's fixed operand rate."""
    per_term = PLAN_SECONDS_PER_TERM if budget is None else _cpu(budget, "random_terms_seconds_per_term", 1e-7)
    R = cell["R"]
    if cell["source"] == "library":
        item = 8 if cell["dtype"] == "float64" else 4
        return (2 * MODEL_DRAWN * R * per_term + 3 * MODEL_STREAM_COUNT * R * item / TRANSFER_BPS
                + device_seconds(cell["kernel"], MODEL_STREAM_COUNT * (MODEL_REPEATS + 2)) + 0.2)
    shapes = _bench_shapes()
    W = cell["W"] or 1
    counts = [b * t // W for b, t in shapes]
    return (2 * max(counts) * R * per_term + sum(3 * c * R * 8 / TRANSFER_BPS for c in counts)
            + sum(device_seconds(cell["kernel"], c * 4 * 5) for c in counts) + len(counts) * 5 * LAUNCH_S)


@functools.cache
def model_plan() -> tuple[tuple, tuple]:
    """(cells measured in the second stage, the rest for the third): in order of value while the sum
    of their planned costs stays within :data:`MODEL_CAP_S`."""
    taken, rest, spent = [], [], 0.0
    for c in model_cells():
        cost = _cell_cost(c, None)
        if not rest and spent + cost <= MODEL_CAP_S:
            taken.append(c)
            spent += cost
        else:
            rest.append(c)
    return tuple(taken), tuple(rest)


def _cell_unit(cell) -> Unit:
    return Unit("kernels" if cell["source"] == "library" else "bench", (cell["kernel"],))


def _units_model():
    return [_cell_unit(c) for c in model_plan()[0]]


def _estimate_model(budget):
    taken, rest = model_plan()
    cost = sum(_cell_cost(c, budget) for c in taken)
    return {"seconds": round(_process_start(budget) + CUDA_INIT_S + cost, 1), "cpu": None, "device": round(cost, 1),
            "detail": f"{len(taken)} of {len(model_cells())} modeled cells in order of value (cap {MODEL_CAP_S:g} s); "
                      f"the other {len(rest)} in the third stage"}


def measure_cell(dev, cell, scale: float = 1.0) -> dict:
    """The measured Mop/s of one model cell: a library kernel streaming (its launcher, 2^22
    expansions), or a benchmark kernel's best case (bench.gpu / dw_gpu / baselines_gpu, quick)."""
    from bench import baselines_gpu, dw_gpu, gpu
    from expansions.cuda import build
    from expansions.generate import random_terms

    if cell["source"] == "bench":
        if cell.get("double_word"):
            return dw_gpu.measure(cell["algorithm"], cell["dtype"], quick=True)
        if cell["mapping"] == "group":
            return gpu.measure(cell["operation"], cell["algorithm"], cell["R"], "best", cell["dtype"], quick=True)
        return baselines_gpu.measure(cell["operation"], cell["algorithm"], cell["R"], "best", cell["dtype"], quick=True)
    R, dtype, op = cell["R"], cell["dtype"], cell["op"]
    info = build.OPERATIONS[op]
    count = max(1024, int(MODEL_STREAM_COUNT * scale))
    drawn = min(count, max(1024, int(MODEL_DRAWN * scale)))
    ops = []
    for k in range(info.operands):
        t = random_terms((drawn,), R, dtype, seed=k + 1, min_exponent=-450 if dtype == "float64" else None)
        t = np.tile(t, (-(-count // drawn), 1))[:count]
        ops.append(dev.to_device(np.ascontiguousarray(t.T) if info.layout == "soa" else t))
    f = dev.launcher(op)
    args = list(ops)
    if not (info.mapping == "term" or (info.mapping == "thread" and info.terms)):
        args.append(R)
    kw = {"renormalize": True} if cell.get("renormalize") and not dev.rehearsal else {}
    with np.errstate(all="ignore"):
        secs = dev.time(lambda: f(*args, **kw), MODEL_REPEATS)
    t = statistics.median(secs)
    return {"mops": count / t / 1e6, "seconds": secs, "expansions": count}


@part("model", "second", "the instruction model's bound (bench/results/model_sm90.json) beside the measured Mop/s "
      "per cell, in order of value within its cap; the rest in the third stage", units=_units_model,
      estimate=_estimate_model)
def run_model(ctx: Context, cells=None):
    dev = ctx.device
    cells = model_plan()[0] if cells is None else cells
    rec = {"part": "model", "device": dev.label, "status": "partial", "cells": []}
    device_name = dev.facts()["name"]
    col = "H200" if "H200" in device_name else MODEL_DEVICE
    full = {r["kernel"]: r for r in json.loads(MODEL_JSON.read_text())["records"]} if MODEL_JSON.exists() else {}
    for k, cell in enumerate(cells):
        if ctx.left() < RESERVE_S:
            rec["stopped"] = f"deadline: {len(cells) - k} cells not measured"
            break
        row = {"kernel": cell["kernel"], "dtype": cell["dtype"], "R": cell["R"], "source": cell["source"],
               "bound_mops": full.get(cell["kernel"], cell)["bound"][col]["mops"], "model_device": col,
               "binding": full.get(cell["kernel"], cell)["bound"][col]["binding"]}
        try:
            m = measure_cell(dev, cell, ctx.scale)
            row["measured_mops"] = m.get("mops")
            row["raw"] = {k2: v for k2, v in m.items() if k2 != "shapes"}
            if row["measured_mops"]:
                row["measured_over_bound"] = row["measured_mops"] / row["bound_mops"]
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rec["cells"].append(row)
        if k % 8 == 7:
            ctx.save("model", rec)
    rec["status"] = "measured" if "stopped" not in rec else "partial"
    ratios = [r["measured_over_bound"] for r in rec["cells"] if r.get("measured_over_bound")]
    rec["summary"] = [f"{len(rec['cells'])} cells, {len(ratios)} measured" + (
        f": measured / bound median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}"
        if ratios else "")]
    over = [r for r in rec["cells"] if (r.get("measured_over_bound") or 0) > 1.0]
    rec["summary"] += [f"ABOVE THE BOUND: {r['kernel']} {r['measured_over_bound']:.2f}" for r in over[:5]]
    ctx.save("model", rec)


# ---------------------------------------------------------------------------------------------
# sanitizer (second): compute-sanitizer on one launch per family


SANITIZER_TOOLS = ("memcheck", "racecheck")


def _units_sanitizer():
    import gpu_launch_each

    return [kernel_unit(i) for i in gpu_launch_each.family_instances()] + [Unit("dw")]


def _estimate_sanitizer(budget):
    import gpu_launch_each

    n = len(gpu_launch_each.family_instances()) + 2
    per_tool = _process_start(budget) + CUDA_INIT_S + 10.0 + n * 0.3
    return {"seconds": round(len(SANITIZER_TOOLS) * per_tool, 1), "cpu": None, "device": None,
            "detail": f"{len(SANITIZER_TOOLS)} tools x ({n} launches under the sanitizer, 0.3 s each; 10 s of the "
                      "sanitizer's own start)"}


@part("sanitizer", "second", "compute-sanitizer memcheck and racecheck on one launch of each kernel family "
      "(tools/gpu_launch_each.py --one-per-family, results checked against the twins)", units=_units_sanitizer,
      estimate=_estimate_sanitizer)
def run_sanitizer(ctx: Context):
    import gpu_launch_each

    rec = {"part": "sanitizer", "device": ctx.device.label, "status": "partial", "tools": {}}
    if ctx.device.rehearsal:
        from expansions import backends

        bad = gpu_launch_each.check_all(gpu_launch_each.twin_launchers(), np.asarray, np.asarray, backends.cpu.reduce,
                                        gpu_launch_each.twin_dw_run, gpu_launch_each.twin_dw_operation,
                                        one_per_family=True)
        rec["tools"]["rehearsal"] = {"note": "rehearsal: the launches run by the twins, no compute-sanitizer",
                                     "disagreements": bad}
        rec["status"] = "failed" if bad else "passed"
        rec["summary"] = [f"rehearsal: {len(bad)} disagreements, compute-sanitizer not run"]
        ctx.save("sanitizer", rec)
        return
    launch = [sys.executable, str(ROOT / "tools" / "gpu_launch_each.py"), "--one-per-family"]
    if shutil.which("compute-sanitizer") is None:
        rec.update(status="skipped", summary=["compute-sanitizer is not on the PATH"])
        ctx.save("sanitizer", rec)
        return
    failed = False
    for tool in SANITIZER_TOOLS:
        left = ctx.left() - RESERVE_S
        if left <= 10:
            rec["tools"][tool] = {"status": "not run: deadline"}
            failed = True
            continue
        cmd = ["compute-sanitizer", f"--tool={tool}", "--error-exitcode=3", *launch]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=left, cwd=ROOT,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)))
            out = p.stdout + p.stderr
            rec["tools"][tool] = {"command": " ".join(cmd), "exit_status": p.returncode, "log_tail": out[-6000:],
                                  "errors_reported": _sanitizer_errors(out)}
            failed |= p.returncode != 0
        except subprocess.TimeoutExpired:
            rec["tools"][tool] = {"command": " ".join(cmd), "status": f"stopped after {left:.0f} s"}
            failed = True
        ctx.save("sanitizer", rec)
    rec["status"] = "failed" if failed else "passed"
    rec["summary"] = [f"{t}: " + (f"exit {v['exit_status']}, {v['errors_reported']}" if "exit_status" in v
                                   else v.get("status", "")) for t, v in rec["tools"].items()]
    ctx.save("sanitizer", rec)


def _sanitizer_errors(text: str) -> str:
    for line in reversed(text.splitlines()):
        if "ERROR SUMMARY" in line or "RACECHECK SUMMARY" in line:
            return line.strip()
    return "no summary line (see log_tail)"


# ---------------------------------------------------------------------------------------------
# verify (second): the bound verification on the GPU's results


VERIFY_OPS = ("add_safe", "add_fast", "mul")
VERIFY_RS = (2, 4, 8)
#: Cases per (operation, R) in the second stage (the issue's 10^7 is the third stage's: see
#: :func:`_estimate_verify_full`); chunks of :data:`VERIFY_CHUNK` cases, one per worker process.
VERIFY_CASES = 10**6
VERIFY_FULL_CASES = 10**7
VERIFY_CHUNK = 62_500
VERIFY_JOBS = 16


def _verify_instances():
    from expansions.cuda import build

    kernel = {"add_safe": "add_safe", "add_fast": "add_fast", "mul": "mul_truncated"}
    return [build.instance(kernel[op], "float64", R) for op in VERIFY_OPS for R in VERIFY_RS]


def _units_verify():
    return [kernel_unit(i) for i in _verify_instances()]


def _estimate_verify(budget, cases=VERIFY_CASES, ops=VERIFY_OPS):
    rates = _cpu(budget, "verify_seconds_per_case", {})
    cpu, missing = 0.0, []
    for op in ops:
        for R in VERIFY_RS:
            r = rates.get(f"{op} {R}")
            if r is None:
                missing.append(f"{op} {R}")
                r = 1e-4
            cpu += r * cases
    workers = VERIFY_JOBS
    wall = cpu / workers + _process_start(budget) + CUDA_INIT_S + 2.0  # workers start in parallel
    return {"seconds": round(wall + _process_start(budget), 1), "cpu": round(cpu, 1), "device": None,
            "missing": missing, "detail": f"{len(ops) * len(VERIFY_RS)} (operation, R) x {cases:.0e} cases, "
            f"float64, exact errors at the measured rate ({cpu:.0f} CPU seconds) on {workers} processes"}


def _verify_chunk(args):
    op, R, dtype, n, seed, backend = args
    from expansions import verify

    row = verify.verify_one(op, R, dtype, n, seed, backend)
    return dataclasses.asdict(row)


def merge_rows(rows: list[dict]) -> dict:
    """One verification row from the rows of its chunks: counts summed, maxima taken, the first
    counterexample kept."""
    out = dict(rows[0])
    for key in ("cases", "nonfinite_cases", "violations", "underflow_cases", "s0_not_rn", "property_violations"):
        out[key] = sum(r[key] for r in rows)
    for key in ("max_error_log2", "max_ratio_log2"):
        vals = [r[key] for r in rows if r[key] is not None]
        out[key] = max(vals) if vals else None
    out["seconds"] = sum(r["seconds"] for r in rows)
    out["counterexample"] = next((r["counterexample"] for r in rows if r["counterexample"]), {})
    out["chunks"] = len(rows)
    return out


def _log(v) -> str:
    return "none (no bound)" if v is None else f"2^{v:.1f}"


def run_verification(ctx: Context, cases: int, name: str, ops=VERIFY_OPS):
    """The verification of ``ops`` at :data:`VERIFY_RS`, ``cases`` per (operation, R), float64, on the
    device's results, in chunks on a pool of worker processes (each with its CUDA context)."""
    import multiprocessing

    backend = "cpu" if ctx.device.rehearsal else "cuda"
    cases = ctx.size(cases, 64)
    chunk = min(VERIFY_CHUNK, cases)
    rec = {"part": name, "device": ctx.device.label, "status": "partial", "cases_per_row": cases, "rows": []}
    jobs = [(op, R) for op in ops for R in VERIFY_RS]
    mp = multiprocessing.get_context("spawn")
    with mp.Pool(1 if ctx.device.rehearsal else VERIFY_JOBS) as pool:
        for op, R in jobs:
            if ctx.left() < RESERVE_S:
                rec["stopped"] = "deadline"
                break
            args = [(op, R, "float64", chunk, [2016, k], backend) for k in range(-(-cases // chunk))]
            parts = pool.map(_verify_chunk, args)
            rec["rows"].append(merge_rows(parts))
            ctx.save(name, rec)
    bad = sum(r["violations"] + r["property_violations"] for r in rec["rows"])
    if "stopped" not in rec:
        rec["status"] = "failed" if bad else "passed"
    total = sum(r["cases"] for r in rec["rows"])
    rec["summary"] = [f"{len(rec['rows'])} of {len(jobs)} (operation, R), {total} cases: {bad} violations"
                      + (" (rehearsal: the twins' results)" if ctx.device.rehearsal else "")]
    rec["summary"] += [f"{r['operation']} R={r['R']}: max error {_log(r['max_error_log2'])}, max error / bound "
                       f"{_log(r['max_ratio_log2'])}, violations {r['violations']}" for r in rec["rows"]]
    ctx.save(name, rec)


@part("verify", "second", f"the bound verification (expansions.verify) of the safe and fast additions and the "
      f"multiplication at R = 2, 4, 8, float64, {VERIFY_CASES:.0e} cases per (operation, R), on the GPU's results, "
      "16 processes", units=_units_verify, estimate=_estimate_verify)
def run_verify(ctx: Context):
    run_verification(ctx, VERIFY_CASES, "verify")


# ---------------------------------------------------------------------------------------------
# elementary (second): the elementary functions at R = 2 beside the CPU engine


ELEMENTARY_COUNT = 100_000
#: Arguments of the GPU's speed measurement.  The engine's figure beside it is its reference
#: computation in the comparison (10^5 arguments and the special values, one thread): a separate
#: timed call on the engine costs about 8 s at any size here (atan: 7.9 s for 2^10 arguments, 10.8 s
#: for 2^14, 15.4 s for 2^16), too much for 34 of them.
ELEMENTARY_GPU_TIMED = 1 << 20


def _units_elementary():
    from expansions.cuda import build

    return [kernel_unit(build.instance(f, dtype, 2)) for f, _, _ in build.ELEMENTARY for dtype in DTYPES] + \
        _numba_units(["elementary"], per_dtype=True)


def elementary_configs():
    from expansions.cuda import build

    return [(f, dtype) for f, _, _ in build.ELEMENTARY for dtype in DTYPES]


def _estimate_elementary(budget):
    compare_s = _cpu(budget, "elementary_compare_seconds", {})
    keys = [f"{f} {dtype}" for f, dtype in elementary_configs()]
    missing = [k for k in keys if k not in compare_s]
    pooled = _pool_estimate([compare_s.get(k, 5.0) for k in keys], GPU_MACHINE_CPU_JOBS)
    per_term = _cpu(budget, "random_terms_seconds_per_term", 1e-7)
    speed_cpu = len(keys) * (2 * (1 << 16) * 2 * per_term + 0.2)  # 2^16 domain arguments drawn and tiled
    device = len(keys) * (ELEMENTARY_GPU_TIMED * 2 * 16 / TRANSFER_BPS + 7 * device_seconds("", ELEMENTARY_GPU_TIMED))
    total = 2 * _process_start(budget) + CUDA_INIT_S + pooled + speed_cpu + device
    return {"seconds": round(total, 1), "cpu": round(sum(compare_s.get(k, 5.0) for k in keys) + speed_cpu, 1),
            "device": round(device, 1), "missing": missing,
            "detail": f"{len(keys)} (function, dtype): {ELEMENTARY_COUNT} domain arguments + specials against the "
                      f"engine (CPU sides measured here one thread each, on {GPU_MACHINE_CPU_JOBS} processes: "
                      f"{pooled:.0f} s), then the GPU timed on 2^20 arguments (at 50 Mop/s at least: the model "
                      "holds no elementary kernel)"}


@part("elementary", "second", "the 17 elementary functions at R = 2, float64 and float32: bit for bit against the CPU "
      "engine on tests/test_elementary_emulated.py's domains and special values, and Mop/s on the GPU beside the "
      "engine's (its reference computation, one thread)", units=_units_elementary, estimate=_estimate_elementary)
def run_elementary(ctx: Context):
    dev = ctx.device
    count = ctx.size(ELEMENTARY_COUNT)
    rec = {"part": "elementary", "device": dev.label, "status": "partial", "results": [], "errors": []}
    configs = elementary_configs()
    rows = {}
    with cpu_pool(1 if dev.rehearsal else cpu_jobs()) as (pool, tmp):  # the comparisons, CPU sides pooled
        results = pool.imap_unordered(_cpu_job_safe, [(f, 2, dtype, count, 0, 0, tmp) for f, dtype in configs])
        for k in range(len(configs)):
            try:
                job = results.next(timeout=max(0.1, ctx.left() - RESERVE_S))
            except Exception as exc:
                rec["stopped"] = f"{type(exc).__name__}: {len(configs) - k} comparisons not run"
                pool.terminate()
                break
            try:
                if "error" in job:
                    raise RuntimeError(job["error"])
                row = compare_prepared(dev, family(job["family"]), job)
                row["cpu_mops"] = row["rows"] / job["reference_seconds"] / 1e6 if job["reference_seconds"] else None
                row["cpu_threads"] = job["reference_threads"]
                rows[job["family"], job["dtype"]] = row
                rec["results"].append(row)
            except Exception as exc:
                rec["errors"].append({"function": job["family"], "dtype": job["dtype"],
                                      "error": f"{type(exc).__name__}: {exc}"})
            _elementary_summary(rec)
            ctx.save("elementary", rec)
    for f, dtype in configs:  # the GPU's speeds
        if "stopped" in rec or ctx.left() < RESERVE_S:
            rec.setdefault("stopped", "deadline: speeds not all measured")
            break
        if (f, dtype) in rows:
            try:
                rows[f, dtype] |= _elementary_speed(dev, family(f), dtype, ctx.size(ELEMENTARY_GPU_TIMED, 1024))
            except Exception as exc:
                rec["errors"].append({"function": f, "dtype": dtype, "error": f"speed: {type(exc).__name__}: {exc}"})
            _elementary_summary(rec)
            ctx.save("elementary", rec)
    if "stopped" not in rec:
        rec["status"] = "failed" if rec["errors"] or any(r["mismatches"] for r in rec["results"]) else "passed"
    _elementary_summary(rec)
    ctx.save("elementary", rec)


def _elementary_summary(rec):
    from expansions.cuda import build

    bad = [r for r in rec["results"] if r["mismatches"]]
    rec["summary"] = [f"{len(rec['results'])} of {2 * len(build.ELEMENTARY)} (function, dtype): {len(bad)} with "
                      f"mismatches, {len(rec['errors'])} errors"]
    rec["summary"] += [f"MISMATCH {r['family']} {r['dtype']}: {r['mismatches']} rows" for r in bad[:8]]
    rec["summary"] += [f"ERROR {e['function']} {e['dtype']}: {e['error'][:200]}" for e in rec["errors"][:4]]
    sp = [r for r in rec["results"] if r.get("gpu_mops") and r.get("cpu_mops")]
    if sp:
        rec["summary"].append("GPU / CPU engine (one thread) speed: " + ", ".join(
            f"{r['family']} {r['dtype'][-2:]} {r['gpu_mops'] / r['cpu_mops']:.3g}x" for r in sp))


def elementary_speed_arguments(fam, dtype, n) -> list:
    """``n`` domain arguments of an elementary function (2^16 drawn, tiled)."""
    sets = fam.inputs(2, dtype, min(n, 1 << 16), 0, 11)
    return [np.ascontiguousarray(np.tile(a, (-(-n // len(a)), 1))[:n]) for a in sets[0][1:]]


def _elementary_speed(dev, fam, dtype, n) -> dict:
    """Mop/s of the function on the device: ``n`` domain arguments, median of 5 calls."""
    with np.errstate(all="ignore"):
        dargs = [dev.to_device(a) for a in elementary_speed_arguments(fam, dtype, n)]
        fn = dev.backend.elementary(fam.name)
        secs = dev.time(lambda: fn(*dargs, 2), 5)
    return {"gpu_timed_arguments": n, "gpu_mops": n / statistics.median(secs) / 1e6, "gpu_seconds": secs}


# ---------------------------------------------------------------------------------------------
# characterize (second): seed 004's chapter 3


def _units_characterize():
    return [Unit("seed004", (b,)) for b in ("standard", "fast", "library")]


def _estimate_characterize(budget):
    return {"seconds": round(_process_start(budget) + CUDA_INIT_S + 20.0, 1), "cpu": None, "device": 20.0,
            "detail": "about 130 short launches (one warp for the latencies, 8 blocks per SM for the throughputs), "
                      "20 s assumed"}


@part("characterize", "second", "seed 004's characterization (paper_repro.seed004_gpu, quick): latencies and "
      "throughputs of the FP32/FP64 operations and of the library's, Tables IV, V, IX beside the thesis",
      units=_units_characterize, estimate=_estimate_characterize)
def run_characterize(ctx: Context):
    from paper_repro import seed004_gpu

    rec = {"part": "characterize", "device": ctx.device.label, "status": "partial"}
    ctx.save("characterize", rec)
    res = seed004_gpu.measure(quick=True)
    rec.update(status="measured", result=res)
    if "library" in res:
        rec["markdown"] = seed004_gpu.markdown(res)
        lib = [r for r in res["library"] if r["op"] in ("add", "mul") and r["R"] == 2]
        rec["summary"] = [f"{r['dtype']} {r['algorithm']}: latency {r['latency_cycles']:.3g} cycles, "
                          f"{r['per_second_events'] / 1e9:.3g} Gop/s" for r in lib]
    else:
        rec["summary"] = [res.get("note") or res.get("skipped") or "no result"]
    ctx.save("characterize", rec)


# ---------------------------------------------------------------------------------------------
# third: what does not fit, in order of value


def _verify_full_part(op: str):
    """The third stage's verification of ``op`` at 10^7 cases per R (one part per operation: each fits a
    command)."""
    kernel = {"add_safe": "add_safe", "add_fast": "add_fast", "mul": "mul_truncated"}[op]
    name = f"verify_full_{op}"

    def units():
        from expansions.cuda import build

        return [kernel_unit(build.instance(kernel, "float64", R)) for R in VERIFY_RS]

    def run(ctx: Context):
        run_verification(ctx, VERIFY_FULL_CASES, name, (op,))

    part(name, "third", f"the bound verification of {op} at {VERIFY_FULL_CASES:.0e} cases per R = 2, 4, 8 (the "
         "issue's size; the second stage runs 10^6)", units=units,
         estimate=lambda budget: _estimate_verify(budget, VERIFY_FULL_CASES, (op,)))(run)


for _op in VERIFY_OPS:
    _verify_full_part(_op)


#: The third stage's exponential at R = 8, 16, 32: 10^5 random rows as 16 chunks on the pool.
EXP_FULL_CHUNKS = 16


def _exp_full_jobs():
    n = BITEXACT_COUNT // EXP_FULL_CHUNKS
    return [("exp", R, dtype, n, 0, k) for R in sorted(EXP_ROWS, reverse=True) for dtype in DTYPES
            for k in range(EXP_FULL_CHUNKS)]


def _estimate_bitexact_exp(budget):
    measured = _cpu(budget, "bitexact", {})
    secs = []
    for _, R, dtype, n, _, _ in _exp_full_jobs():
        secs.append(measured.get(f"exp {R} {dtype}", 60.0) * n / EXP_ROWS[R])  # per row, as measured
    wall = _pool_estimate(secs, GPU_MACHINE_CPU_JOBS)
    return {"seconds": round(2 * _process_start(budget) + CUDA_INIT_S + wall, 1), "cpu": round(sum(secs), 1),
            "device": None, "detail": f"{len(secs)} chunks of {BITEXACT_COUNT // EXP_FULL_CHUNKS} rows, the CPU sides "
            f"scaled per row from the measured comparisons, on {GPU_MACHINE_CPU_JOBS} processes"}


@part("bitexact_exp", "third", "exp against the engine at R = 8, 16, 32 on 10^5 random rows (the first stage runs "
      "10^4, 2000, 1000 there), in 16 chunks", units=lambda: [kernel_unit(_exp_instance(R, d)) for R in EXP_ROWS
                                                             for d in DTYPES] + _numba_units(["exp"], per_dtype=True),
      estimate=_estimate_bitexact_exp)
def run_bitexact_exp(ctx: Context):
    run_comparisons(ctx, "bitexact_exp", [(f, R, d, ctx.size(n), s, k) for f, R, d, n, s, k in _exp_full_jobs()])


def _exp_instance(R, dtype):
    from expansions.cuda import build

    return build.instance("exp", dtype, R)


def _estimate_model_rest(budget):
    taken, rest = model_plan()
    cost = sum(_cell_cost(c, budget) for c in rest)
    return {"seconds": round(_process_start(budget) + CUDA_INIT_S + cost, 1), "cpu": None, "device": round(cost, 1),
            "detail": f"the {len(rest)} model cells the second stage leaves"}


@part("model_rest", "third", "the model cells the second stage's cap leaves, in order of value",
      units=lambda: [_cell_unit(c) for c in model_plan()[1]], estimate=_estimate_model_rest)
def run_model_rest(ctx: Context):
    run_model(ctx, model_plan()[1])
    path = ctx.out / "model.json"
    if path.exists():
        os.replace(path, ctx.out / "model_rest.json")


def _run_command(ctx: Context, cmd: list, doc: str) -> dict:
    """A command of a third-stage part: its exit status, status and the end of its output."""
    rec = {"command": " ".join(cmd), "status": "partial"}
    if ctx.device.rehearsal:
        return rec | {"status": "skipped", "summary": [f"rehearsal: would run {' '.join(cmd)}"]}
    left = ctx.left() - RESERVE_S
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, left), cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1"))
        rec.update(exit_status=p.returncode, log_tail=(p.stdout + p.stderr)[-8000:],
                   status="passed" if p.returncode == 0 else "failed")
    except (subprocess.TimeoutExpired, OSError) as exc:
        rec.update(status="partial" if isinstance(exc, subprocess.TimeoutExpired) else "error",
                   stopped=f"{type(exc).__name__}", log_tail=str(getattr(exc, "stdout", "") or exc)[-8000:])
    rec["summary"] = [f"{doc}: {rec['status']}" + (f" (exit {rec['exit_status']})" if "exit_status" in rec else "")]
    return rec


@part("gpu_tests", "third", "the GPU test suite (pytest -m gpu, 16 workers): every kernel against its twin at the "
      "tests' sizes", estimate=lambda b: {"seconds": None, "detail": "not sized: compiles every instance the GPU "
                                          "tests use (thousands); run alone, with the stage's limit"})
def run_gpu_tests(ctx: Context):
    rec = _run_command(ctx, [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-n", "16", "-p",
                             "no:cacheprovider", "tests"], "pytest -m gpu")
    ctx.save("gpu_tests", rec | {"part": "gpu_tests"})


@part("synccheck", "third", "compute-sanitizer synccheck and initcheck on the one-launch-per-family script",
      units=_units_sanitizer, estimate=_estimate_sanitizer)
def run_synccheck(ctx: Context):
    rec = {"part": "synccheck", "tools": {}}
    for tool in ("synccheck", "initcheck"):
        rec["tools"][tool] = _run_command(ctx, ["compute-sanitizer", f"--tool={tool}", "--error-exitcode=3",
                                                sys.executable, str(ROOT / "tools" / "gpu_launch_each.py"),
                                                "--one-per-family"], f"compute-sanitizer {tool}")
        ctx.save("synccheck", rec)
    states = [t["status"] for t in rec["tools"].values()]
    rec["status"] = "passed" if all(s == "passed" for s in states) else (
        "skipped" if all(s == "skipped" for s in states) else "failed")
    rec["summary"] = [line for t in rec["tools"].values() for line in t["summary"]]
    ctx.save("synccheck", rec)


@part("paper_repro", "third", "the main job on the GPU (python -m paper_repro --backend cuda, full sizes: Tables "
      "I-IV with streaming and aims, the verification at 10^4 samples, the double-word and seed reproductions), its "
      "folder packed as paper_repro.tar.gz",
      estimate=lambda b: {"seconds": None, "detail": "not sized: its parts were 9-minute phases of the old runbook"})
def run_paper_repro(ctx: Context):
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(prefix="expansions-paper-") as tmp:
        rec = _run_command(ctx, [sys.executable, "-m", "paper_repro", "--backend", "cuda", "--no-progress", "--out",
                                 tmp], "python -m paper_repro")
        if any(Path(tmp).iterdir()):
            with tarfile.open(ctx.out / "paper_repro.tar.gz", "w:gz") as tar:
                tar.add(tmp, arcname="paper_repro")
    ctx.save("paper_repro", rec | {"part": "paper_repro"})
