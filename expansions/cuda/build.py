"""Kernel instances, their NVRTC compilation (with or without a GPU) and the per-device loader.

One table, :data:`OPERATIONS`, describes the ``__global__`` templates of ``kernels.cu``; an
:class:`Instance` (operation, term dtype, N, M, R) gives its name expression, and every list of
instances (the resource check's, the loader's) is generated from it, never typed out.

Compilation goes through ``cupy.cuda.nvrtc`` directly, with :data:`OPTIONS`, for an explicit
``-arch=sm_XX``: that needs only the NVRTC library, no GPU and no driver, and ``--ptxas-options=-v``
reports registers, stack and spills.  The loader compiles the same way for the current device and
loads the CUBIN with ``cupy.RawModule(path=...)``.  It does not use ``RawModule(code=...)``: CuPy
appends ``-ftz=true`` to the options of the programs it compiles, which would flush float32
subnormals and break the bit equality with the NumPy twins (design decision 3).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..baselines import BASELINES
from ..bounds import newton_steps
from ..formats import canonical_dtype, format_of, group_width

CUDA_DIR = Path(__file__).resolve().parent
ENTRY = "kernels.cu"

#: NVRTC options of every build: explicit rounding stays explicit (no contraction, no fast math),
#: subnormals are kept, division and square root are IEEE.
OPTIONS = ("-std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")

#: Threads per block of the launchers (a multiple of 32: the grid-stride loop needs whole warps).
BLOCK = 256

#: C++ term type of each dtype.
CTYPES = {"float64": "double", "float32": "float"}


@dataclass(frozen=True)
class Operation:
    """A ``__global__`` template of ``kernels.cu``.

    ``params`` names its integer template parameters after the term type: ``NMR`` for binary
    operations on N- and M-term inputs with R-term output, ``NR`` for unary ones, ``R`` for those whose
    inputs and output all have R terms, ``""`` for kernels of a fixed number of terms (``terms``),
    ``RC`` for the reductions of ``reduce.cuh`` (R terms, chunks of C elements per lane group; their
    arguments are those of ``expansions.cuda.reduce_launch``, not ``(inputs, out, count)``).
    ``operands`` is the number of input arrays.  ``mapping`` says how threads map to expansions:
    ``"group"``, a group of W lanes per expansion (decision 2); ``"term"``, one thread per term;
    ``"thread"``, one thread per expansion (the sequential baselines).  ``layout`` is ``"aos"`` for
    C-contiguous (count, terms) arrays, ``"soa"`` for (terms, count) arrays, term k of every expansion
    contiguous.  ``resource_rs``, when set, replaces the R values of the resource check.  ``table``: the
    kernel takes, after ``count``, the table of the elementary functions
    (:func:`expansions.cuda.elementary.device_table`), and its operands and result have R terms.  ``twin`` is
    the CPU twin that returns the same bits (a function of the ``expansions`` package, dotted path),
    ``doc`` the one-line contract of the launcher that :mod:`expansions.cuda.launch` generates.
    ``renormalizes``: the kernel has a renormalizing instance (:attr:`Instance.renormalize`)."""

    name: str
    params: str
    operands: int
    mapping: str = "group"
    layout: str = "aos"
    terms: int | None = None
    resource_rs: tuple | None = None
    newton: bool = False  # template parameters end with the step sizes of bounds.newton_steps(R)
    #: the template takes ``bool RENORMALIZE`` after its sizes: true renormalizes the result in
    #: registers before the store (the operation, then ``renormalize``, in one launch: the library's
    #: default), false stores the raw output of the twin.
    renormalizes: bool = False
    table: bool = False
    twin: str = ""
    doc: str = ""


#: R values of the resource check of the Newton kernels, on sm_90 and on the other architectures
#: (each kernel inlines several products and renormalizations per step, and R = 32 takes NVRTC
#: about 40 s: the loader compiles any R on demand; R = 32 uses about 150 registers, no spills).
NEWTON_R = (2, 3, 4, 8, 16)
NEWTON_R_OTHER_ARCHS = (2, 4)

#: R values of the reduced resource check on the older architectures, and of the sequential
#: baselines on every architecture (their code grows with R^2; the benchmarks use 2, 4, 8, 16, 32).
SUBSET_R = (2, 3, 4, 5, 8, 13, 16, 31, 32)


#: R values of the resource check of the elementary functions (each kernel compiles its whole
#: algorithm: NVRTC takes about 90 s for the 17 kernels at R = 2 and float64 on two cores, 18 s for exp
#: and sin at R = 32 (162 registers, no spills); the loader
#: compiles any R on demand).
ELEMENTARY_R = (2,)

#: The elementary functions (elementary.cuh): name, operands, one-line contract.
ELEMENTARY = (
    ("exp", 1, "e^x"), ("expm1", 1, "e^x - 1, relatively accurate near 0"), ("log", 1, "the natural logarithm"),
    ("log1p", 1, "log(1 + x), relatively accurate near 0"), ("log2", 1, "the base-2 logarithm"),
    ("log10", 1, "the base-10 logarithm"), ("sin", 1, "the sine (Payne-Hanek reduction)"),
    ("cos", 1, "the cosine (Payne-Hanek reduction)"), ("tan", 1, "the tangent (Payne-Hanek reduction)"),
    ("atan", 1, "the arctangent"), ("asin", 1, "the arcsine"), ("acos", 1, "the arccosine"),
    ("sinh", 1, "the hyperbolic sine"), ("cosh", 1, "the hyperbolic cosine"), ("tanh", 1, "the hyperbolic tangent"),
    ("atan2", 2, "atan2(y, x), the quadrants and special cases of IEEE 754"),
    ("pow", 2, "x ** y = exp(y log|x|) with the signs and special cases of IEEE 754 pow"),
)


def _elementary_operations():
    for name, operands, doc in ELEMENTARY:
        yield Operation(name, "R", operands, resource_rs=ELEMENTARY_R, table=True, twin=f"cpu.elementary.{name}",
                        doc=f"{doc}, in R terms (elementary.cuh)")


def _baseline_operations():
    """The sequential baselines of :data:`expansions.baselines.BASELINES`, an AoS and a SoA entry each."""
    for b in BASELINES.values():
        for suffix, layout in (("", "aos"), ("_soa", "soa")):
            params, rs = ("", None) if b.terms else ("R", SUBSET_R)
            doc = (f"{b.operation} of {b.terms or 'R'}-term expansions, one thread per expansion ({b.source})"
                   + (", on (terms, count) arrays" if layout == "soa" else ""))
            yield Operation(b.name + suffix, params, 2, "thread", layout, b.terms, rs,
                            twin=f"baselines.cpu.{b.name}{suffix}", doc=doc)


#: The kernels, in the order of the resource table.
OPERATIONS = {
    op.name: op
    for op in (
        Operation("add_safe", "NMR", 2, renormalizes=True, twin="cpu.kernels.add_safe",
                  doc="x + y in R terms, safe parallel addition (Algorithm 1)"),
        Operation("sub_safe", "NMR", 2, renormalizes=True, twin="cpu.kernels.sub_safe", doc="x - y as add_safe(x, -y)"),
        Operation("add_fast", "NMR", 2, renormalizes=True, twin="cpu.kernels.add_fast",
                  doc="x + y in R terms, fast parallel addition (Fig. 5)"),
        Operation("sub_fast", "NMR", 2, renormalizes=True, twin="cpu.kernels.sub_fast", doc="x - y as add_fast(x, -y)"),
        Operation("mul_truncated", "NMR", 2, renormalizes=True, twin="cpu.kernels.mul_truncated",
                  doc="x * y in R terms, truncated parallel multiplication (Algorithm 2)"),
        Operation("newton_reciprocal", "NR", 1, resource_rs=NEWTON_R, newton=True, renormalizes=True,
                  twin="cpu.newton.reciprocal",
                  doc="1/x in R terms by Newton iterations"),
        Operation("newton_div", "NMR", 2, resource_rs=NEWTON_R, newton=True, renormalizes=True,
                  twin="cpu.newton.div",
                  doc="x/y in R terms, x times the Newton reciprocal of y (y may have one term: division by a float)"),
        Operation("newton_sqrt", "NR", 1, resource_rs=NEWTON_R, newton=True, renormalizes=True,
                  twin="cpu.newton.sqrt",
                  doc="sqrt(x) in R terms by the Newton iteration for 1/sqrt(x)"),
        Operation("renormalize", "NR", 1, twin="cpu.kernels.renormalize",
                  doc="x renormalized to R ulp-nonoverlapping terms"),
        Operation("negate", "R", 1, mapping="term", twin="cpu.kernels.negate", doc="-x, every term negated (exact)"),
        Operation("reduce_sum", "RC", 1, resource_rs=SUBSET_R, twin="cpu.reduce.reduce_pass",
                  doc="one pass of the canonical pairwise sum (launched by expansions.cuda.reduce_launch)"),
        Operation("reduce_dot", "RC", 2, resource_rs=SUBSET_R, twin="cpu.reduce.reduce_pass",
                  doc="one pass of the canonical pairwise dot product (launched by expansions.cuda.reduce_launch)"),
        *_baseline_operations(),
        *_elementary_operations(),
    )
}

#: Mixed input/output sizes (N, M, R) compiled besides N = M = R.
MIXED_SIZES = ((2, 4, 4), (4, 2, 8), (8, 8, 4), (1, 3, 2), (16, 8, 32))


@dataclass(frozen=True, order=True)
class Instance:
    """One template instance: operation, term dtype name, input sizes N and M, output size R.

    Operations without an ``M`` parameter have M = 0; those without ``N`` have N = R.  ``C`` is the
    chunk size of the reductions (params ``RC``), 0 for the other operations.  ``renormalize``: the
    instance renormalizes its result in registers (operations with ``renormalizes``; the template's
    ``RENORMALIZE`` flag), else it stores the raw output."""

    op: str
    dtype: str
    N: int
    M: int
    R: int
    C: int = 0
    renormalize: bool = False

    @property
    def name_expression(self) -> str:
        params = {"NMR": (self.N, self.M, self.R), "NR": (self.N, self.R), "R": (self.R,), "": (),
                  "RC": (self.R, self.C)}
        ints = tuple(map(str, params[OPERATIONS[self.op].params]))
        if OPERATIONS[self.op].renormalizes:
            ints = ints + ("true" if self.renormalize else "false",)
        if OPERATIONS[self.op].newton:
            ints = ints + tuple(map(str, newton_steps(self.R, format_of(self.dtype))))
        return f"expansions::{self.op}<{', '.join([CTYPES[self.dtype], *ints])}>"

    @property
    def label(self) -> str:
        """The operation's name, ``+renormalize`` for a renormalizing instance (the resource table's)."""
        return self.op + ("+renormalize" if self.renormalize else "")

    @property
    def group_width(self) -> int:
        """Lanes per expansion, W = next power of two >= max(N, M, R)."""
        return group_width(max(self.N, self.M, self.R))


#: Chunk size (elements per lane group and pass) of a reduction instance when none is given.
DEFAULT_CHUNK = 32
#: Largest chunk size of the reductions.
MAX_CHUNK = 1024


def instance(op: str, dtype, R: int, N: int | None = None, M: int | None = None, C: int | None = None,
             renormalize: bool = False) -> Instance:
    """The instance of ``op`` for term ``dtype``, output R and inputs N (and M), default R.  A kernel of
    a fixed number of terms accepts only that R.  The reductions (params ``RC``) take a chunk size C,
    a power of two in 2..:data:`MAX_CHUNK` (default :data:`DEFAULT_CHUNK`).  ``renormalize``: the
    instance that renormalizes in registers (operations with ``renormalizes`` only)."""
    if op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; known: {', '.join(OPERATIONS)}")
    dt = canonical_dtype(dtype).name
    info = OPERATIONS[op]
    params = info.params
    if renormalize and not info.renormalizes:
        raise ValueError(f"{op}: has no renormalizing instance")
    if info.terms is not None and R != info.terms:
        raise ValueError(f"{op}: works on {info.terms} terms, got R = {R}")
    N = R if (N is None or params in ("R", "")) else N
    M = (R if M is None else M) if params == "NMR" else 0
    for name, k in (("R", R), ("N", N)) + ((("M", M),) if params == "NMR" else ()):
        if not 1 <= k <= 32:
            raise ValueError(f"{op}: {name} = {k} is outside 1..32")
    if params != "RC":
        if C is not None:
            raise ValueError(f"{op}: has no chunk size C")
        return Instance(op, dt, N, M, R, 0, bool(renormalize))
    C = DEFAULT_CHUNK if C is None else int(C)
    if not (2 <= C <= MAX_CHUNK and C & (C - 1) == 0):
        raise ValueError(f"{op}: the chunk size C = {C} is not a power of two in 2..{MAX_CHUNK}")
    return Instance(op, dt, N, M, R, C)


def resource_instances(arch: str) -> list[Instance]:
    """Instances of the resource check: on sm_90 every operation, both term dtypes, every R in
    2..32 with N = M = R, and :data:`MIXED_SIZES`; on other architectures R in :data:`SUBSET_R`.
    Fixed-size kernels: their number of terms; operations with ``resource_rs``: those R; the Newton
    kernels: :data:`NEWTON_R` on sm_90, :data:`NEWTON_R_OTHER_ARCHS` elsewhere, no mixed sizes; the
    elementary functions: :data:`ELEMENTARY_R` on sm_90 only.  Operations with ``renormalizes``: these
    sizes for the renormalizing instance (the one the library
    launches by default), and on sm_90 the raw instance too, for R in :data:`SUBSET_R` (its code is
    the renormalizing instance's without the renormalization)."""
    rs = range(2, 33) if arch == "sm_90" else SUBSET_R
    out = []
    for op, info in OPERATIONS.items():
        op_rs = (info.terms,) if info.terms else (info.resource_rs or rs)
        if info.newton and arch != "sm_90":
            op_rs = NEWTON_R_OTHER_ARCHS
        if info.table and arch != "sm_90":
            continue
        for dtype in CTYPES:
            sizes = [(R, R, R) for R in op_rs]
            if info.params in ("NMR", "NR") and not info.newton:
                sizes += list(MIXED_SIZES)
            for N, M, R in sizes:
                if info.renormalizes:
                    out.append(instance(op, dtype, R, N, M, renormalize=True))
                if not info.renormalizes or (arch == "sm_90" and R in SUBSET_R):
                    out.append(instance(op, dtype, R, N, M))
    return sorted(set(out), key=lambda i: (list(OPERATIONS).index(i.op), i.renormalize, list(CTYPES).index(i.dtype),
                                           i.R, i.N, i.M))


#: The include line that :func:`source` replaces by :func:`newton_steps_source` (not a file).
GENERATED_STEPS = "newton_steps.generated"


def newton_steps_source() -> str:
    """``NewtonSteps<T, R>`` (newton.cuh) for both term types and R in 2..32: the step sizes of
    :func:`expansions.bounds.newton_steps`, generated, never typed in (the elementary functions call
    the Newton division and square root at several numbers of terms inside one kernel)."""
    lines = ["namespace expansions {"]
    for dt, ct in CTYPES.items():
        for R in range(2, 33):
            steps = ", ".join(map(str, newton_steps(R, format_of(dt))))
            lines.append(f"template <> struct NewtonSteps<{ct}, {R}> {{ using type = Steps<{steps}>; }};")
    return "\n".join(lines + ["}  // namespace expansions"])


@functools.cache
def source(entry: str = ENTRY) -> str:
    """``kernels.cu`` (or another file of this folder, e.g. the users' header ``user.cuh``) with its
    local ``#include "..."`` files inlined once each (``#pragma once``): one self-contained text, so
    that NVRTC needs no include path and a cache key covers it all."""
    seen: set[str] = set()

    def expand(name: str) -> str:
        if name in seen:
            return ""
        seen.add(name)
        if name == GENERATED_STEPS:
            return f"// ---- generated by expansions.cuda.build.newton_steps_source\n{newton_steps_source()}\n"
        lines = []
        for line in (CUDA_DIR / name).read_text().splitlines():
            m = re.match(r'\s*#include\s+"([^"]+)"', line)
            if m:
                lines.append(expand(m.group(1)))
            elif line.strip() != "#pragma once":
                lines.append(line)
        return f"// ---- expansions/cuda/{name}\n" + "\n".join(lines) + "\n"

    return expand(entry)


@dataclass(frozen=True)
class Resources:
    """ptxas's report for one compiled kernel."""

    lowered: str
    registers: int
    stack: int
    spill_stores: int
    spill_loads: int

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


@dataclass(frozen=True)
class Compiled:
    """One NVRTC program: its CUBIN (or PTX), the lowered names and ptxas's resource usage."""

    arch: str
    binary: bytes
    lowered: dict
    resources: dict
    log: str


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS_RE = re.compile(r"Function properties for (\S+)")
_SPILL_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers")


def parse_ptxas_log(log: str) -> dict:
    """``{mangled name: (registers, stack, spill stores, spill loads)}`` for the entry functions of
    a ``--ptxas-options=-v`` log."""
    found: dict = {}
    entry = props = None
    for line in log.splitlines():
        if m := _ENTRY_RE.search(line):
            entry = m.group(1)
            found[entry] = [0, 0, 0, 0]
        elif m := _PROPS_RE.search(line):
            props = m.group(1)
        elif (m := _SPILL_RE.search(line)) and props in found:
            found[props][1:] = [int(m.group(1)), int(m.group(2)), int(m.group(3))]
        elif (m := _USED_RE.search(line)) and entry in found:
            found[entry][0] = int(m.group(1))
    return {k: tuple(v) for k, v in found.items()}


def nvrtc_version() -> tuple[int, int]:
    from cupy.cuda import nvrtc  # optional dependency: CuPy is needed only on the GPU path

    return tuple(nvrtc.getVersion())


def supported_archs() -> tuple[int, ...]:
    from cupy.cuda import nvrtc  # optional dependency: CuPy is needed only on the GPU path

    return tuple(nvrtc.getSupportedArchs())


def compile_source(text: str, names, arch: str = "sm_90", verbose: bool = True, filename: str = ENTRY,
                   options=None):
    """Compile CUDA source ``text`` with the library's options (or ``options``: the characterization's
    standard and fast-math builds) for ``arch`` and the name expressions ``names`` (``sm_XX``: a CUBIN,
    and with ``verbose`` ptxas reports resources; ``compute_XX``: PTX).  Returns ``(binary, {name:
    lowered name}, log)``.  No GPU needed.  Every kernel of the project (these, the double-word ones,
    the benchmark ones) is compiled here."""
    from cupy.cuda import nvrtc  # optional dependency: CuPy is needed only on the GPU path

    names = list(dict.fromkeys(names))
    opts = [f"-arch={arch}", *(OPTIONS if options is None else options)]
    opts += ["--ptxas-options=-v"] if verbose and arch.startswith("sm_") else []
    prog = nvrtc.createProgram(text, filename, [], [])
    try:
        for n in names:
            nvrtc.addNameExpression(prog, n)
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as exc:
            raise RuntimeError(f"NVRTC failed for {arch} ({exc}):\n{nvrtc.getProgramLog(prog)}") from None
        lowered = {n: nvrtc.getLoweredName(prog, n) for n in names}
        binary = nvrtc.getCUBIN(prog) if arch.startswith("sm_") else nvrtc.getPTX(prog)
        return binary, lowered, nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def compile_instances(instances, arch: str = "sm_90", verbose: bool = True) -> Compiled:
    """Compile ``instances`` in one NVRTC program for ``arch`` (see :func:`compile_source`)."""
    instances = list(dict.fromkeys(instances))
    binary, by_name, log = compile_source(source(), [i.name_expression for i in instances], arch, verbose)
    lowered = {i: by_name[i.name_expression] for i in instances}
    usage = parse_ptxas_log(log)
    resources = {i: Resources(low, *usage[low]) for i, low in lowered.items() if low in usage}
    return Compiled(arch, binary, lowered, resources, log)


def compile_resources(jobs, batch_size: int = 40, threads: int = 2) -> dict:
    """``{(arch, instance): Resources}`` for ``jobs`` = ``{arch: instances}``: each arch's instances
    are compiled in programs of about ``batch_size`` instances (interleaved, so that every program
    gets a share of the large, slow ones), all programs on ``threads`` threads (NVRTC releases the
    GIL).  Raises if ptxas reports nothing for an instance."""
    programs = []
    for arch, instances in jobs.items():
        instances = list(dict.fromkeys(instances))
        k = max(1, -(-len(instances) // batch_size))
        programs += [(arch, instances[j::k]) for j in range(k) if instances[j::k]]
    out: dict = {}
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for arch, compiled in zip(
            [a for a, _ in programs], pool.map(lambda job: compile_instances(job[1], job[0]), programs)
        ):
            missing = [i for i in compiled.lowered if i not in compiled.resources]
            if missing:
                raise RuntimeError(f"ptxas reported no resources on {arch} for {missing[:3]}")
            out.update({(arch, i): r for i, r in compiled.resources.items()})
    return out


# ---------------------------------------------------------------------------------------------
# Loader: compile on demand for the current device, memoized per device, CUBINs cached on disk.


def cache_dir() -> Path:
    """Where compiled CUBINs are kept: ``$EXPANSIONS_CACHE_DIR`` or ``~/.cache/expansions/cuda``."""
    env = os.environ.get("EXPANSIONS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "expansions" / "cuda"


def device_arch(device_id: int) -> str:
    """The NVRTC target for a device: ``sm_<cc>`` if NVRTC supports it, else the newest supported
    ``sm_<major><minor'>`` with the same major and a lower minor (binary compatible)."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    cc = int(cupy.cuda.Device(device_id).compute_capability)
    archs = supported_archs()
    if cc in archs:
        return f"sm_{cc}"
    same_major = [a for a in archs if a // 10 == cc // 10 and a < cc]
    if not same_major:
        raise RuntimeError(
            f"NVRTC {nvrtc_version()} cannot generate code for compute capability {cc}: "
            "install an NVRTC that supports it (e.g. a newer nvidia-cuda-nvrtc wheel)"
        )
    return f"sm_{max(same_major)}"


class DeviceKernels:
    """The kernels of one device: instances compiled on demand, functions memoized."""

    #: Instances per NVRTC program when many are requested at once (compiled on parallel threads).
    batch_size = 24

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.arch = device_arch(device_id)
        self._functions: dict = {}
        self._modules: list = []
        self._lock = threading.Lock()

    def get(self, *instances: Instance):
        """The ``cupy.RawKernel`` of each instance; the missing ones are compiled first (in
        programs of at most :attr:`batch_size` instances, on parallel threads)."""
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        with self._lock:
            missing = [i for i in dict.fromkeys(instances) if i not in self._functions]
            if missing:
                k = -(-len(missing) // self.batch_size)
                batches = [missing[j::k] for j in range(k)]
                threads = min(len(batches), os.cpu_count() or 1)
                with ThreadPoolExecutor(max_workers=threads) as pool:
                    built = list(pool.map(self._cubin, batches))
                with cupy.cuda.Device(self.device_id):
                    for batch, (path, lowered) in zip(batches, built):
                        module = cupy.RawModule(path=str(path))
                        for i in batch:
                            self._functions[i] = module.get_function(lowered[i.name_expression])
                        self._modules.append(module)
            return [self._functions[i] for i in instances]

    def _cubin(self, instances) -> tuple[Path, dict]:
        """Path of the CUBIN holding ``instances`` (compiled unless cached on disk) and
        ``{name expression: lowered name}`` (:func:`cached_cubin` of ``kernels.cu``)."""
        return cached_cubin(source(), [i.name_expression for i in instances], self.arch)


def cache_key(text: str, names, arch: str, filename: str = ENTRY, options=None) -> str:
    """The disk-cache key of one NVRTC program: its source, options, target, NVRTC version, file name
    and name expressions (in any order).  Whatever compiles the same program with the same NVRTC
    finds the same files, in this process or in another one (``tools/gpu_compile.py`` fills the cache
    with a process pool before a GPU run's first launch)."""
    opts = OPTIONS if options is None else tuple(options)
    parts = [text, *opts, arch, str(nvrtc_version()), filename, *sorted(dict.fromkeys(names))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def cached_cubin(text: str, names, arch: str, filename: str = ENTRY, options=None) -> tuple[Path, dict]:
    """The CUBIN of the program ``text`` with the name expressions ``names`` for ``arch`` (compiled by
    :func:`compile_source`, unless :func:`cache_dir` holds it under :func:`cache_key`) and
    ``{name expression: lowered name}``.  No GPU needed: the loaders (:class:`DeviceKernels`, the
    double-word module, the benchmark and program kernels) load the file with ``cupy.RawModule``."""
    names = list(dict.fromkeys(names))
    key = cache_key(text, names, arch, filename, options)
    folder = cache_dir()
    cubin, table = folder / f"{key}.cubin", folder / f"{key}.json"
    if not (cubin.exists() and table.exists()):
        binary, lowered, _ = compile_source(text, names, arch, verbose=False, filename=filename, options=options)
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(cubin, binary)
        _write_atomic(table, json.dumps(lowered, indent=1).encode())
    return cubin, json.loads(table.read_text())


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@functools.cache
def device_kernels(device_id: int) -> DeviceKernels:
    """The memoized :class:`DeviceKernels` of a device."""
    return DeviceKernels(device_id)


def kernels(*instances: Instance):
    """The ``cupy.RawKernel`` of each instance for the current CuPy device."""
    import cupy  # optional dependency: CuPy is needed only on the GPU path

    return device_kernels(cupy.cuda.Device().id).get(*instances)
