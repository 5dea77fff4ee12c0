"""Launch configuration from the CUDA occupancy calculator's formulas (no GPU needed).

The occupancy of a kernel is the ratio of the warps resident on a multiprocessor to the most it can
hold.  For a block of T threads, r registers per thread and S bytes of shared memory per block, the
CUDA Occupancy Calculator (NVIDIA, ``CUDA_Occupancy_Calculator.xls``, "CUDA Occupancy Calculator"
DA-05679-101) takes the resident blocks per multiprocessor as the least of four limits:

* the blocks limit: ``max_blocks_per_sm``;
* the warps limit: ``floor(max_warps_per_sm / ceil(T / 32))``;
* the registers limit: registers are allocated per warp in units of ``register_unit`` (256):
  ``regs_per_warp = ceil(r * 32 / 256) * 256``; warps are allocated in groups of
  ``warp_granularity`` (4, one per scheduler partition of the register file), so the multiprocessor
  holds ``floor(registers_per_sm / (warp_granularity * regs_per_warp)) * warp_granularity`` warps,
  ``floor(that / ceil(T / 32))`` blocks; zero when one block needs more than
  ``max_registers_per_block`` or r exceeds ``max_registers_per_thread``;
* the shared-memory limit: ``floor(shared_per_sm / ceil((S + reserved) / 128) / 128)`` with the
  ``reserved`` 1 KB per block of compute capability 8.0 and later (CUDA C++ Programming Guide,
  "Shared Memory" of compute capabilities 8.x and 9.0); none when S + reserved is 0.

Then occupancy = blocks * ceil(T / 32) / max_warps_per_sm.  Example of the CUDA C++ Best Practices
Guide ("Calculating Occupancy"), compute capability 7.0: 37 registers per thread give 75 % occupancy
with 128-thread blocks (12 resident blocks) and 63 % with 320-thread blocks (4 blocks); and at most
32 registers per thread allow 100 % (the tests check both).

Device limits: from CuPy's device attributes when a GPU is present (:func:`device_limits`), else
the compute capability 9.0 column of the CUDA C++ Programming Guide's "Technical Specifications per
Compute Capability" table (:data:`SM90`): 64 K 32-bit registers per multiprocessor, at most 64 K
per block and 255 per thread, 64 resident warps (2048 threads) and 32 resident blocks per
multiprocessor, 1024 threads per block, 228 KB of shared memory per multiprocessor (227 KB per
block); the allocation units (256 registers, 4 warps, 128 bytes) are the occupancy calculator's for
compute capabilities 7.0 to 9.0.

:func:`choose_block` picks the block size of highest occupancy among the multiples of 32 up to
1024; ties are broken by ``measure`` (seconds per launch, on the device) when given, else by the
library's default :data:`expansions.cuda.build.BLOCK` when it is among them, else the largest.
"""

from __future__ import annotations

import dataclasses
import math

from . import build


@dataclasses.dataclass(frozen=True)
class DeviceLimits:
    name: str
    max_threads_per_block: int = 1024
    warp_size: int = 32
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    max_registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    shared_per_sm: int = 233472
    reserved_shared_per_block: int = 1024
    register_unit: int = 256
    warp_granularity: int = 4
    shared_unit: int = 128
    source: str = ""


_GUIDE = "CUDA C++ Programming Guide, Technical Specifications per Compute Capability"

#: Compute capability 9.0 (H100, H200): the guide's table and the occupancy calculator's units.
SM90 = DeviceLimits("sm_90 (table)", source=f"{_GUIDE}, 9.0; CUDA Occupancy Calculator allocation units")

#: Compute capability 7.0 (V100), for the Best Practices Guide's example: 96 KB of shared memory,
#: no reserved shared memory per block.
SM70 = DeviceLimits("sm_70 (table)", shared_per_sm=98304, reserved_shared_per_block=0,
                    source=f"{_GUIDE}, 7.0; CUDA Occupancy Calculator allocation units")

_ATTRIBUTES = {  # DeviceLimits field: CuPy device attribute (cudaDevAttr... without the prefix)
    "max_threads_per_block": "MaxThreadsPerBlock",
    "warp_size": "WarpSize",
    "max_blocks_per_sm": "MaxBlocksPerMultiprocessor",
    "registers_per_sm": "MaxRegistersPerMultiprocessor",
    "max_registers_per_block": "MaxRegistersPerBlock",
    "shared_per_sm": "MaxSharedMemoryPerMultiprocessor",
    "reserved_shared_per_block": "ReservedSharedMemoryPerBlock",
}


def device_limits(device_id: int | None = None) -> DeviceLimits:
    """The limits of a CUDA device from CuPy's attributes (missing ones from :data:`SM90`), or
    :data:`SM90` when no GPU is visible or ``device_id`` is None."""
    if device_id is None:
        return SM90
    try:
        import cupy  # optional dependency: CuPy is needed only on the GPU path

        dev = cupy.cuda.Device(device_id)
        attrs = dev.attributes
        cc = int(dev.compute_capability)
    except Exception:  # no CuPy, no driver, no such device: the table
        return SM90
    values = {f: int(attrs[a]) for f, a in _ATTRIBUTES.items() if a in attrs}
    if "MaxThreadsPerMultiProcessor" in attrs:
        values["max_warps_per_sm"] = int(attrs["MaxThreadsPerMultiProcessor"]) // values.get("warp_size", 32)
    return dataclasses.replace(SM90, name=f"sm_{cc} (device {device_id})",
                               source="CuPy device attributes; CUDA Occupancy Calculator allocation units", **values)


def _ceil_to(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def blocks_per_sm(threads: int, registers: int, limits: DeviceLimits = SM90, shared: int = 0) -> tuple:
    """(resident blocks per multiprocessor, the limiting resource) for blocks of ``threads`` threads
    using ``registers`` per thread and ``shared`` bytes of shared memory (the module docstring)."""
    if threads <= 0 or threads > limits.max_threads_per_block or threads % limits.warp_size:
        raise ValueError(f"a block of {threads} threads: use a multiple of {limits.warp_size} up to "
                         f"{limits.max_threads_per_block}")
    warps = threads // limits.warp_size
    limit = {"blocks": limits.max_blocks_per_sm, "warps": limits.max_warps_per_sm // warps}
    regs_per_warp = _ceil_to(max(registers, 1) * limits.warp_size, limits.register_unit)
    if registers > limits.max_registers_per_thread or regs_per_warp * warps > limits.max_registers_per_block:
        limit["registers"] = 0
    else:
        g = limits.warp_granularity
        limit["registers"] = (limits.registers_per_sm // (g * regs_per_warp)) * g // warps
    per_block = _ceil_to(shared + limits.reserved_shared_per_block, limits.shared_unit)
    if per_block:
        limit["shared memory"] = limits.shared_per_sm // per_block
    blocks = min(limit.values())
    return blocks, min(limit, key=lambda k: (limit[k], k != "registers"))


def occupancy(threads: int, registers: int, limits: DeviceLimits = SM90, shared: int = 0) -> float:
    """Resident warps over the most a multiprocessor holds."""
    blocks, _ = blocks_per_sm(threads, registers, limits, shared)
    return blocks * (threads // limits.warp_size) / limits.max_warps_per_sm


def table(registers: int, limits: DeviceLimits = SM90, shared: int = 0, sizes=None) -> list[dict]:
    """One row per block size (default: every multiple of 32 up to the device's maximum)."""
    sizes = sizes or range(limits.warp_size, limits.max_threads_per_block + 1, limits.warp_size)
    rows = []
    for t in sizes:
        blocks, limiter = blocks_per_sm(t, registers, limits, shared)
        rows.append({"threads": t, "blocks_per_sm": blocks, "warps_per_sm": blocks * (t // limits.warp_size),
                     "occupancy": blocks * (t // limits.warp_size) / limits.max_warps_per_sm, "limited_by": limiter})
    return rows


@dataclasses.dataclass
class LaunchChoice:
    """A block size chosen for a kernel, and why."""

    threads: int
    registers: int
    occupancy: float
    limits: DeviceLimits
    tied: list  # the block sizes of the same (highest) occupancy
    how: str  # 'only one', 'measured', 'library default', 'largest'
    rows: list
    seconds: dict = dataclasses.field(default_factory=dict)  # measured seconds per tied size

    def text(self) -> str:
        tied = ", ".join(map(str, self.tied))
        return (f"{self.threads} threads per block ({self.registers} registers per thread on {self.limits.name}: "
                f"occupancy {self.occupancy:.0%}, {self.rows_for(self.threads)['blocks_per_sm']} blocks per SM; "
                f"the highest occupancy at {tied}; tie broken by {self.how})")

    def rows_for(self, threads: int) -> dict:
        return next(r for r in self.rows if r["threads"] == threads)

    def markdown(self) -> str:
        lines = ["| threads per block | blocks per SM | warps per SM | occupancy | limited by |",
                 "|---|---|---|---|---|"]
        for r in self.rows:
            if r["threads"] % 128 == 0 or r["threads"] == self.threads:
                mark = " (chosen)" if r["threads"] == self.threads else ""
                lines.append(f"| {r['threads']}{mark} | {r['blocks_per_sm']} | {r['warps_per_sm']} | "
                             f"{r['occupancy']:.0%} | {r['limited_by']} |")
        return "\n".join(lines) + "\n"


def choose_block(registers: int, limits: DeviceLimits = SM90, shared: int = 0, measure=None,
                 preferred: int = build.BLOCK) -> LaunchChoice:
    """The block size of highest occupancy (see the module docstring); ``measure(threads)`` gives the
    seconds of a launch with that block size on the device, to break ties."""
    rows = table(registers, limits, shared)
    best = max(r["occupancy"] for r in rows)
    if best == 0:
        raise ValueError(f"a kernel of {registers} registers per thread cannot launch on {limits.name}")
    tied = [r["threads"] for r in rows if math.isclose(r["occupancy"], best)]
    seconds = {}
    if len(tied) == 1:
        threads, how = tied[0], "only one"
    elif measure is not None:
        seconds = {t: measure(t) for t in tied}
        threads, how = min(tied, key=lambda t: (seconds[t], t)), "measured"
    elif preferred in tied:
        threads, how = preferred, "library default"
    else:
        threads, how = max(tied), "largest"
    return LaunchChoice(threads, registers, best, limits, tied, how, rows, seconds)


def kernel_registers(text: str, name: str, arch: str = "sm_90") -> int:
    """Registers per thread of the kernel ``name`` (a name expression) in CUDA source ``text``, from
    NVRTC's ``--ptxas-options=-v`` (no GPU needed)."""
    _, lowered, log = build.compile_source(text, [name], arch, verbose=True, filename="occupancy.cu")
    usage = build.parse_ptxas_log(log)
    return usage[lowered[name]][0]
