"""SASS of the kernels without a GPU: NVRTC 13 compiles a source for sm_90 with the library's options
(:data:`expansions.cuda.build.OPTIONS`) to a CUBIN, NVIDIA's ``nvdisasm`` prints its SASS, and this
module parses it into instructions and classifies each warp instruction (design decision 12).

Tools (the ``model`` extra of ``pyproject.toml``): the NVRTC library ``libnvrtc.so.13`` of the
``nvidia-cuda-nvrtc`` wheel, loaded here through ``ctypes`` (CuPy's binding is tied to the NVRTC of
its CUDA major version: ``cupy-cuda12x`` loads NVRTC 12), and the ``nvdisasm`` executable of the
``nvidia-cuda-nvdisasm`` wheel.  ``$EXPANSIONS_NVRTC13_LIBRARY`` and ``$EXPANSIONS_NVDISASM`` name
other copies (``EXPANSIONS_NVRTC=1`` is run.sh's switch for installing CuPy, not a path).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from expansions.cuda import build

ARCH = "sm_90"

#: Instruction classes, in the order of the tables.
CLASSES = ("fp64", "fp32", "shfl", "vote", "select", "int", "branch", "memory", "local", "other")

#: Opcode (before the first dot) -> class.  FP64: the DFMA/DADD/DMUL pipe (and its compares and
#: conversions through the FP64 unit); FP32: the FMA pipe's float instructions; branch/sync: control
#: flow and convergence barriers; memory: global, shared, constant-bank loads and stores; local:
#: per-thread local memory (spills, stack arrays).
_CLASS_OF = {
    **dict.fromkeys(("DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DSET", "F2F", "DRSQ", "DMMA"), "fp64"),
    **dict.fromkeys(("FADD", "FMUL", "FFMA", "FSETP", "FSET", "FMNMX", "FCHK", "FSWZADD", "FADD32I", "FMUL32I",
                     "FFMA32I", "MUFU", "FRND"), "fp32"),
    "SHFL": "shfl",
    **dict.fromkeys(("VOTE", "VOTEU", "MATCH", "REDUX"), "vote"),
    **dict.fromkeys(("SEL", "FSEL", "USEL"), "select"),
    **dict.fromkeys(("IADD3", "IMAD", "IADD", "IMUL", "ISETP", "LOP3", "LOP", "SHF", "SHL", "SHR", "LEA", "LEA.HI",
                     "MOV", "MOV32I", "IABS", "IMNMX", "VIMNMX", "PRMT", "POPC", "FLO", "BREV", "BMSK", "SGXT",
                     "PLOP3", "P2R", "R2P", "S2R", "CS2R", "S2UR", "UMOV", "UIADD3", "ULOP3", "USHF", "UISETP",
                     "ULEA", "UIMAD", "ULDC", "R2UR", "UPLOP3", "UPRMT", "IMAD.MOV", "I2F", "F2I", "I2FP", "F2IP",
                     "I2I", "F2FP", "IDP", "ISCADD", "VIADD", "UFLO", "UPOPC", "UBMSK", "USGXT", "FMUL.FTZ",
                     "IMNMX.U32", "LDC", "ULDC.64", "NOP", "CCTL", "DEPBAR", "PMTRIG", "CSMTEST", "S2UR",
                     "LEPC", "UP2UR", "UR2UP", "UIADD3.64", "UCLEA", "UVIRTCOUNT"), "int"),
    **dict.fromkeys(("BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK",
                     "WARPSYNC", "BAR", "BMOV", "YIELD", "KILL", "NANOSLEEP", "WARPGROUP", "ACQBULK", "ELECT",
                     "BPT", "RTT", "ENDCOLLECTIVE", "ACQSHMINIT"), "branch"),
    **dict.fromkeys(("LDG", "STG", "LD", "ST", "LDS", "STS", "ATOM", "ATOMG", "ATOMS", "RED", "LDSM", "MEMBAR",
                     "ERRBAR", "FENCE", "LDGSTS", "LDGDEPBAR", "SYNCS", "UBLKCP", "UTMALDG", "UTMASTG"), "memory"),
    **dict.fromkeys(("LDL", "STL"), "local"),
}


def classify(opcode: str) -> str:
    """The class (one of :data:`CLASSES`) of a SASS opcode such as ``DADD`` or ``SHFL.IDX``."""
    base = opcode.split(".")[0]
    return _CLASS_OF.get(base, "other")


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: byte offset in its function, opcode (with modifiers), operands text,
    guard predicate (``@P0``, ``@!PT``...) and the label targeted by a branch (``None`` if none)."""

    offset: int
    opcode: str
    operands: str
    guard: str
    target: str | None

    @property
    def cls(self) -> str:
        return classify(self.opcode)

    @property
    def is_branch(self) -> bool:
        return self.opcode.split(".")[0] in ("BRA", "BRX", "JMP")


@dataclass
class Function:
    """The SASS of one kernel: its instructions in address order and ``{label: offset}``."""

    name: str
    instructions: list
    labels: dict

    def index_of(self, offset: int) -> int:
        return self._index[offset]

    def __post_init__(self):
        self._index = {ins.offset: k for k, ins in enumerate(self.instructions)}


def _wheel_file(*parts: str) -> Path | None:
    """A file of the ``nvidia`` namespace package (the CUDA 13 wheels put theirs under ``nvidia/cu13``)."""
    for base in sys.path:
        p = Path(base, "nvidia", *parts)
        if p.exists():
            return p
    return None


def nvdisasm_path() -> str | None:
    """The nvdisasm executable: ``$EXPANSIONS_NVDISASM``, the wheel's, or one on the PATH; None if absent."""
    env = os.environ.get("EXPANSIONS_NVDISASM")
    if env:
        return env
    p = _wheel_file("cu13", "bin", "nvdisasm")
    return str(p) if p else shutil.which("nvdisasm")


def nvrtc_library() -> str | None:
    """The NVRTC 13 library: ``$EXPANSIONS_NVRTC13_LIBRARY`` or the wheel's ``libnvrtc.so.13``; None if absent."""
    env = os.environ.get("EXPANSIONS_NVRTC13_LIBRARY")
    if env:
        return env
    p = _wheel_file("cu13", "lib", "libnvrtc.so.13")
    return str(p) if p else None


def missing_tools() -> str | None:
    """Why the model cannot run here (a sentence), or None when NVRTC 13 and nvdisasm are present."""
    lacking = [n for n, p in (("libnvrtc.so.13", nvrtc_library()), ("nvdisasm", nvdisasm_path())) if not p]
    if lacking:
        return f"{' and '.join(lacking)} not found: pip install 'expansions[model]'"
    return None


@functools.cache
def _nvrtc():
    path = nvrtc_library()
    if path is None:
        raise RuntimeError(missing_tools())
    lib = ctypes.CDLL(path)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def _check(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"{what}: {_nvrtc().nvrtcGetErrorString(code).decode()}")


def nvrtc_version() -> str:
    """NVRTC's version, e.g. ``13.5``."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(_nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return f"{major.value}.{minor.value}"


@functools.cache
def nvdisasm_version() -> str:
    """nvdisasm's version line, e.g. ``V13.5.37``."""
    out = subprocess.run([nvdisasm_path(), "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def compile_cubin(text: str, names, arch: str = ARCH, filename: str = "model.cu") -> tuple[bytes, dict]:
    """Compile CUDA ``text`` with the library's NVRTC options for ``arch``: (CUBIN, {name expression:
    lowered name})."""
    lib = _nvrtc()
    names = list(dict.fromkeys(names))
    prog = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), filename.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        for n in names:
            _check(lib.nvrtcAddNameExpression(prog, n.encode()), f"nvrtcAddNameExpression({n})")
        opts = [f"-arch={arch}", *build.OPTIONS]
        argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        code = lib.nvrtcCompileProgram(prog, len(opts), argv)
        if code != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed for {arch}:\n{log.value.decode(errors='replace')}")
        lowered = {}
        for n in names:
            p = ctypes.c_char_p()
            _check(lib.nvrtcGetLoweredName(prog, n.encode(), ctypes.byref(p)), f"nvrtcGetLoweredName({n})")
            lowered[n] = p.value.decode()
        size = ctypes.c_size_t()
        _check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
        buf = ctypes.create_string_buffer(size.value)
        _check(lib.nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN")
        return buf.raw, lowered
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def disassemble(cubin: bytes) -> str:
    """nvdisasm's text of a CUBIN (code sections only)."""
    with tempfile.TemporaryDirectory(prefix="expansions-sass-") as d:
        path = Path(d, "k.cubin")
        path.write_bytes(cubin)
        return subprocess.run([nvdisasm_path(), "-c", str(path)], capture_output=True, text=True,
                              check=True).stdout


_SECTION_RE = re.compile(r"^\s*\.text\.(\S+):\s*$")
_LABEL_RE = re.compile(r"^\s*(\.L_\w+):")
_INS_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\s*(.*?)\s*;")
_TARGET_RE = re.compile(r"`\((\.L_\w+)\)")


def parse(text: str) -> dict:
    """``{mangled kernel name: Function}`` from nvdisasm's text."""
    out: dict = {}
    cur = None
    pending: list = []
    for line in text.splitlines():
        if m := _SECTION_RE.match(line):
            cur = Function(m.group(1), [], {})
            out[cur.name] = cur
            pending = []
            continue
        if cur is None:
            continue
        if m := _LABEL_RE.match(line):
            pending.append(m.group(1))
            continue
        if m := _INS_RE.match(line):
            off = int(m.group(1), 16)
            for lab in pending:
                cur.labels[lab] = off
            pending = []
            t = _TARGET_RE.search(m.group(4))
            cur.instructions.append(Instruction(off, m.group(3), m.group(4), (m.group(2) or "").strip(),
                                                t.group(1) if t else None))
    for f in out.values():
        f.__post_init__()
    return out


def sass(text: str, names, arch: str = ARCH) -> dict:
    """``{name expression: Function}``: ``text`` compiled with the library's options and disassembled."""
    cubin, lowered = compile_cubin(text, names, arch)
    funcs = parse(disassemble(cubin))
    return {n: funcs[low] for n, low in lowered.items()}


def counts(instructions) -> dict:
    """``{class: number of instructions}`` over :data:`CLASSES` (zeros included)."""
    out = dict.fromkeys(CLASSES, 0)
    for ins in instructions:
        out[ins.cls] += 1
    return out


# ---------------------------------------------------------------------------------------------
# The steady state of one operation: a walk through the code of one iteration of a kernel's loop.


class ModelError(RuntimeError):
    """The walk met code it cannot account for (the cell is reported as not modeled, with this reason)."""


#: Event of a data-dependent loop that ran its bound of rounds without a vote saying stop.
END = "end"

_QNAN_RE = re.compile(r"QNAN|0x7ff80000|0x7fc00000")
#: Most instructions of a non-finite fix-up (decision 6: a few selects and compares; no shuffle, vote or loop).
_FIXUP_MAX = 48
#: Most instructions of a load or store skipped for groups past the end of the arrays.
_GUARDED_MEMORY_MAX = 16
_PRED_RE = re.compile(r"^(U?P[0-6])\b")


def _base(op: str) -> str:
    return op.split(".")[0]


def loops(func: Function) -> list[tuple[int, int]]:
    """``(header index, latch index)`` of every loop: a conditional backward ``BRA`` (the branches
    back from the out-of-line slow paths of ``BRA.DIV`` are unconditional and are not loops)."""
    out = []
    for k, ins in enumerate(func.instructions):
        if ins.is_branch and ins.guard and ".DIV" not in ins.opcode and ins.target in func.labels:
            t = func.index_of(func.labels[ins.target])
            if t <= k:
                out.append((t, k))
    return out


def _votes_directly_in(func: Function, loop, all_loops) -> bool:
    """Whether the loop holds a predicate vote (``VOTE.ANY Pn``, a warp_any) outside its inner loops."""
    h, l = loop
    inner = [(a, b) for a, b in all_loops if (a, b) != loop and h <= a and b <= l]
    for k in range(h, l + 1):
        ins = func.instructions[k]
        if _base(ins.opcode) == "VOTE" and _PRED_RE.match(ins.operands) and not any(a <= k <= b for a, b in inner):
            return True
    return False


def steady_loop(func: Function, kind: str = "grid") -> tuple[int, int]:
    """The loop of one operation per iteration.  ``kind="grid"`` (a library kernel): the outermost
    loop holding floating-point instructions, the grid-stride loop (load, operate, store);
    ``kind="best"`` (a benchmark kernel): the outermost such loop without global loads or stores,
    the loop of K operations in registers."""
    all_loops = loops(func)

    def has(loop, classes):
        return any(func.instructions[k].cls in classes for k in range(loop[0], loop[1] + 1))

    cands = [lp for lp in all_loops if has(lp, ("fp64", "fp32")) and (kind == "grid" or not has(lp, ("memory",)))]
    if not cands:
        raise ModelError(f"no {kind} loop")
    return max(cands, key=lambda lp: lp[1] - lp[0])


_IMM = r"(-?0x[0-9a-f]+|-?\d+)"
_INC_RE = re.compile(r"^(R\d+), (R\d+), " + _IMM + r"(?:, RZ)?$")
_CMP_RE = re.compile(r"^(P\d), PT, (R\d+), " + _IMM + r", PT$")
_INIT_RE = re.compile(r"^(R\d+), RZ, RZ, (RZ|-?0x[0-9a-f]+|-?\d+)$")
_CMPS = {"NE": lambda a, b: a != b, "EQ": lambda a, b: a == b, "LT": lambda a, b: a < b,
         "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}


def counted_trips(func: Function, loop) -> int:
    """Trip count of a loop with a compile-time count, read from its SASS: a counter set to a constant
    before the loop (``IMAD.MOV.U32 Rc, RZ, RZ, a`` or ``MOV Rc, a``), stepped by a constant in the
    body (``VIADD``/``IADD3 Rc, Rc, d``) and compared with a constant (``ISETP.cc Pn, PT, Rc, b``) that
    guards the latch.  Raises :class:`ModelError` when the loop is not of that form."""
    h, l = loop
    body = func.instructions[h:l + 1]
    latch = func.instructions[l]
    pred = latch.guard.lstrip("@!")
    cmp = next((i for i in reversed(body) if _base(i.opcode) == "ISETP" and i.operands.startswith(pred + ",")), None)
    m = _CMP_RE.match(cmp.operands) if cmp else None
    cc = cmp.opcode.split(".")[1] if cmp else None
    if not m or cc not in _CMPS or ".AND" not in cmp.opcode or ".EX" in cmp.opcode:
        raise ModelError(f"loop at {body[0].offset:#x}-{latch.offset:#x}: no constant trip count found")
    reg, limit = m.group(2), int(m.group(3), 0)
    incs = [(k, i) for k, i in enumerate(body) if _base(i.opcode) in ("VIADD", "IADD3")
            and (mi := _INC_RE.match(i.operands)) and mi.group(1) == reg and mi.group(2) == reg]
    pair = f"R{int(reg[1:]) - 1}," if int(reg[1:]) % 2 else None  # CS2R Rn, SRZ clears Rn and Rn+1
    inits = [i for i in func.instructions[:h] if i.operands.startswith(reg + ",")
             or (pair and _base(i.opcode) == "CS2R" and i.operands.startswith(pair))]
    mi = _INIT_RE.match(inits[-1].operands) if inits and _base(inits[-1].opcode) == "IMAD" else None
    if inits and _base(inits[-1].opcode) == "MOV":
        mi = re.match(r"^(R\d+), " + _IMM + "$", inits[-1].operands)
    if inits and _base(inits[-1].opcode) == "CS2R":
        mi = re.match(r"^(R\d+), (SRZ)$", inits[-1].operands)
    if len(incs) != 1 or not mi or inits[-1].guard:
        raise ModelError(f"loop at {body[0].offset:#x}-{latch.offset:#x}: no constant trip count found")
    step = int(_INC_RE.match(incs[0][1].operands).group(3), 0)
    value = 0 if mi.groups()[-1] in ("RZ", "SRZ") else int(mi.groups()[-1], 0)
    after = incs[0][0] < body.index(cmp)  # the compare sees the stepped counter
    negated = latch.guard.startswith("@!")
    for trips in range(1, 100_000):
        seen = value + step if after else value
        value += step
        if _CMPS[cc](seen, limit) == negated:  # the latch is not taken: the loop ends
            return trips
    raise ModelError(f"loop at {body[0].offset:#x}-{latch.offset:#x}: trip count not found")


def walk(func: Function, events=(), counted=(), kind: str = "grid", per_lane: str = "shorter",
         max_steps: int = 2_000_000, info: dict | None = None) -> list:
    """The instructions one warp issues for one iteration of :func:`steady_loop` (of ``kind``), header
    to latch.

    Branch rules: ``BRA.DIV`` (the slow path of a shuffle or vote in a diverged warp) is not taken,
    the warp being converged; a branch on a predicate vote (``warp_any``, the exit test of a
    data-dependent loop) takes the next of ``events`` (True: some group of the warp still active);
    the latch of a loop that holds such a vote is taken unless the next event is :data:`END` (the
    loop ran its bound of rounds); the latch of any other inner loop is taken until the loop has run
    the next trip count of ``counted`` (compile-time trip counts, in the order the loops are met), or
    when ``counted`` is used up the count read from the loop's code (:func:`counted_trips`); a
    forward branch that skips the non-finite fix-up (code that makes a quiet NaN), which finite data
    never run, is taken; one that skips a global load or store, which every group of a steady-state
    iteration makes, is not taken.  Any other forward branch is per lane (or per thread): both sides
    are walked to the point where the warp reconverges (the innermost open ``BSSY``'s label, else the
    branch target), and ``per_lane="shorter"`` keeps the side with fewer instructions (a warp issues
    at least one side, so the count stays a lower bound and the Mop/s an upper bound), ``"both"``
    both sides (a warp whose lanes disagree); ``info["per_lane_branches"]`` gets their number.
    Anything else raises :class:`ModelError`."""
    w = _Walker(func, kind, per_lane, max_steps)
    state = {"events": list(events), "counted": list(counted), "trips": {}, "pred": {}, "bssy": []}
    out, _ = w.run(w.head, None, state)
    if info is not None:
        info["per_lane_branches"] = w.per_lane_branches
    if state["events"] and any(e != END for e in state["events"]):
        raise ModelError(f"{len(state['events'])} loop events left unused at the end of the operation")
    if state["counted"]:
        raise ModelError(f"counted loops {state['counted']} not met")
    return out


def _copy_state(state: dict) -> dict:
    return {"events": list(state["events"]), "counted": list(state["counted"]),
            "trips": {k: list(v) for k, v in state["trips"].items()}, "pred": dict(state["pred"]),
            "bssy": list(state["bssy"])}


class _Walker:
    """The walk of :func:`walk`: ``run(pc, stop, state)`` follows the code from ``pc`` until index
    ``stop`` (exclusive; ``None``: through the steady loop's latch)."""

    def __init__(self, func: Function, kind: str, per_lane: str, max_steps: int):
        self.func = func
        self.ins = func.instructions
        # what depends on the code only is computed once per function and kind (a cell walks its
        # function once per distinct vote sequence)
        cache = func.__dict__.setdefault("_walk_cache", {})
        if kind not in cache:
            all_loops = loops(func)
            cache[kind] = {"steady": steady_loop(func, kind),
                           "data_loops": {lp for lp in all_loops if _votes_directly_in(func, lp, all_loops)},
                           "by_latch": {lp[1]: lp for lp in all_loops}, "predicated": {}, "trips": {}}
        c = cache[kind]
        self.head, self.latch = c["steady"]
        self.data_loops, self.by_latch = c["data_loops"], c["by_latch"]
        self._predicated, self._trips = c["predicated"], c["trips"]
        self.per_lane = per_lane
        self.per_lane_branches = 0
        self.steps = max_steps

    def run(self, pc: int, stop, state: dict) -> tuple[list, int]:
        out: list = []
        while True:
            self.steps -= 1
            if self.steps < 0:
                raise ModelError("walk too long")
            if pc == stop:
                return out, pc
            ins = self.ins[pc]
            out.append(ins)
            while state["bssy"] and state["bssy"][-1] == pc:  # the reconvergence point of an open BSSY
                state["bssy"].pop()
            if m := _PRED_RE.match(ins.operands):
                state["pred"][m.group(1)] = _base(ins.opcode)
            op = _base(ins.opcode)
            if op == "VOTE" and m and self._predicated_vote(pc, m.group(1)):
                # a data-dependent loop's exit test that the compiler if-converted (its last round runs
                # predicated on the vote, no branch): the same instructions issue either way, so the
                # recorded event for it is used up here
                events = state["events"]
                while events and events[0] == END:
                    events.pop(0)
                if not events:
                    raise ModelError(f"predicated vote at {ins.offset:#x} with no event left")
                events.pop(0)
            if pc == self.latch and stop is None:
                return out, pc
            if op == "BSSY" and ins.target in self.func.labels:
                state["bssy"].append(self.func.index_of(self.func.labels[ins.target]))
            if op == "EXIT" and ins.guard in ("", "@PT"):
                raise ModelError(f"EXIT at {ins.offset:#x} inside the operation")
            if op in ("CALL", "RET", "BRX", "JMX", "JMP"):
                raise ModelError(f"{ins.opcode} at {ins.offset:#x}: calls and indirect branches are not followed")
            if not ins.is_branch or ".DIV" in ins.opcode:
                pc += 1
                continue
            target = self.func.index_of(self.func.labels[ins.target])
            if not ins.guard or ins.guard == "@PT":
                pc = target
                continue
            if target <= pc:
                if self._latch_taken(pc, state):
                    state["bssy"] = [b for b in state["bssy"] if not target < b <= pc]  # closed in the body
                    pc = target
                else:
                    pc += 1
                continue
            neg = ins.guard.startswith("@!")
            pred = ins.guard.lstrip("@!")
            if state["pred"].get(pred) == "VOTE":
                events = state["events"]
                while events and events[0] == END:
                    events.pop(0)
                if not events:
                    raise ModelError(f"vote branch at {ins.offset:#x} with no event left")
                pc = target if bool(events.pop(0)) != neg else pc + 1
                continue
            skipped = self.ins[pc + 1:target]
            if (any(_QNAN_RE.search(i.operands) for i in skipped) and len(skipped) <= _FIXUP_MAX
                    and not any(i.cls in ("shfl", "vote") or k in self.by_latch
                                for k, i in enumerate(skipped, pc + 1))):
                pc = target  # the non-finite fix-up, which finite data skip
                continue
            if (len(skipped) <= _GUARDED_MEMORY_MAX and any(i.cls == "memory" for i in skipped)
                    and not any(i.cls in ("fp64", "fp32", "shfl", "vote") for i in skipped)):
                pc += 1  # a load or store of a group past the end: every group of a steady-state iteration is valid
                continue
            pc = self._both_sides(pc, target, state, out)

    def _predicated_vote(self, pc: int, pred: str) -> bool:
        """Whether the predicate vote at ``pc`` guards instructions (predication) and no branch before
        its predicate is written again or the straight-line code ends."""
        if (pc, pred) not in self._predicated:
            self._predicated[(pc, pred)] = self._scan_predicated(pc, pred)
        return self._predicated[(pc, pred)]

    def _scan_predicated(self, pc: int, pred: str) -> bool:
        used = False
        for ins in self.ins[pc + 1:]:
            guard = ins.guard.lstrip("@!")
            if ins.is_branch and ".DIV" not in ins.opcode:
                return used and guard != pred
            if guard == pred:
                used = True
            if (m := _PRED_RE.match(ins.operands)) and m.group(1) == pred:
                return used
        return used

    def _latch_taken(self, pc: int, state: dict) -> bool:
        lp = self.by_latch[pc]
        if lp in self.data_loops:
            if state["events"] and state["events"][0] == END:
                state["events"].pop(0)
                return False
            return True
        trips = state["trips"]
        if lp not in trips:
            if state["counted"]:
                n = state["counted"].pop(0)
            else:
                if lp not in self._trips:
                    self._trips[lp] = counted_trips(self.func, lp)
                n = self._trips[lp]
            trips[lp] = [n, 1]
        taken = trips[lp][1] < trips[lp][0]
        trips[lp][1] += 1
        if not taken:
            del trips[lp]
        return taken

    def _both_sides(self, pc: int, target: int, state: dict, out: list) -> int:
        """A per-lane branch at ``pc``: walk both sides to the reconvergence point, keep one (or both)."""
        rc = state["bssy"][-1] if state["bssy"] and state["bssy"][-1] > pc else target
        sides = []
        for start in (target, pc + 1):
            st = _copy_state(state)
            try:
                code, _ = self.run(start, rc, st)
            except ModelError:
                continue
            sides.append((code, st))
        if not sides:
            ins = self.ins[pc]
            raise ModelError(f"per-lane branch at {ins.offset:#x} ({ins.guard} {ins.opcode}): no side reaches "
                             f"the reconvergence point")
        self.per_lane_branches += 1
        if self.per_lane == "both":
            for code, _ in sides:
                out.extend(code)
        else:
            out.extend(min(sides, key=lambda cs: len(cs[0]))[0])
        chosen = min(sides, key=lambda cs: len(cs[0]))[1]
        state.update(chosen)
        if state["bssy"] and state["bssy"][-1] == rc:
            state["bssy"].pop()
        return rc
