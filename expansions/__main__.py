"""Command line: ``python -m expansions info``, ``verify``, ``tune``, ``docs`` and ``warm``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__, backends, tuning, verify, verify_elementary, warm
from . import formats as F
from .arraytype import ExpansionArray
from .backends import gpu_environment


def _ints(s):
    return [int(v) for v in s.split(",") if v]


def _strs(s):
    return [v for v in s.split(",") if v]


def commit() -> str:
    """The git commit of the source tree, or 'unknown' outside a checkout."""
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except OSError:
        pass
    return "unknown"


def environment() -> dict:
    """Versions and device of this run, recorded by the code in every results file."""
    env = {
        "expansions": __version__,
        "commit": commit(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
    }
    env.update(gpu_environment())
    return env


def device_slug() -> str:
    """A folder name for this run's results: the GPU's name, or 'cpu-<machine>'."""
    env = gpu_environment()
    name = env["gpu_name"] if env.get("gpu_available") else f"cpu-{platform.machine()}"
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-").lower()


def cmd_info(args) -> int:
    env = environment()
    print(f"expansions {env['expansions']} (commit {env['commit']})")
    print(f"python {env['python']}, numpy {env['numpy']}")
    print("backends:")
    reason = backends.cpu_backend_reason()
    if reason is None and backends.cpu_backend().name == "engine":
        print("  cpu : the compiled engine (numba; EXPANSIONS_CPU=twins selects the NumPy twins)")
    elif reason is None:
        print("  cpu : the NumPy twins (EXPANSIONS_CPU=twins; unset it for the compiled engine)")
    else:
        print(f"  cpu : the NumPy twins; the compiled engine is not available: {reason}")
    print("  twins: NumPy twins of the GPU kernels, the executable specification (always available)")
    if env.get("gpu_available"):
        print(f"  cuda: {env['gpu_name']} (driver {env['driver']}, CuPy {env['cupy']})")
    else:
        print(f"  cuda: not available ({env.get('gpu_reason', 'no GPU')})")
    print("formats (terms R = 2..32):")
    for fmt in (F.FLOAT64, F.FLOAT32):
        print(f"  {fmt.name}: p = {fmt.p}, normal exponents {fmt.emin}..{fmt.emax}, smallest subnormal "
              f"2^{fmt.emin - fmt.p + 1}; at most {F.max_useful_terms(fmt)} nonzero normal terms")
        cells = []
        for R in (2, 4, 8, 16, 32):
            cells.append(f"R={R}: {F.nominal_bits(R, fmt)} bits nominal, "
                         f"{F.effective_bits(R, fmt, 0)} near 1")
        print("    " + "; ".join(cells))
    print("  Terms below the smallest subnormal cannot exist: the effective precision of a value is")
    print("  min(R(p-1)+1, bits from its leading term down to the smallest subnormal).")
    return 0


def cmd_verify_elementary(args) -> int:
    """``verify --elementary``: the elementary functions against mpmath (expansions.verify_elementary)."""
    names = _strs(args.functions) if args.functions else list(verify_elementary.FUNCTIONS)
    for name in names:
        if name not in verify_elementary.FUNCTIONS:
            print(f"verify: unknown function {name!r}; choose from {', '.join(verify_elementary.FUNCTIONS)}",
                  file=sys.stderr)
            return 2
    by_terms = {int(k): int(v) for k, v in (item.split(":") for item in _strs(args.samples_by_terms))}
    rows = verify_elementary.run(_ints(args.terms), _strs(args.dtype), names, args.samples, args.seed, by_terms,
                                 progress=not args.no_progress)
    header = {"command": "python -m expansions verify " + " ".join(sys.argv[2:]), "samples": args.samples,
              "samples_by_terms": by_terms, "seed": args.seed,
              "backend": ("cpu (engine: the twins on its compiled operations, the twins' bits)"
                          if backends.cpu_backend().name == "engine" else "cpu (NumPy twins)")}
    header.update(environment())
    print(verify_elementary.markdown(rows, header))
    if args.out:
        out = verify_elementary.write(rows, header, args.out)
        print(f"wrote {out / 'elementary.md'} and {out / 'elementary.json'}")
    return 1 if sum(r.violations for r in rows) else 0


def cmd_verify(args) -> int:
    if args.elementary:
        return cmd_verify_elementary(args)
    gpu = gpu_environment().get("gpu_available", False)
    backend = args.backend
    if backend == "auto":
        backend = "cuda" if gpu else "cpu"
    if backend == "cuda" and not gpu:
        print("verify: --backend cuda needs a CUDA GPU visible to CuPy", file=sys.stderr)
        return 2
    ops = _strs(args.operations)
    for op in ops:
        if op not in verify.ALL_OPERATIONS:
            print(f"verify: unknown operation {op!r}; choose from {', '.join(verify.ALL_OPERATIONS)}",
                  file=sys.stderr)
            return 2
    rows = verify.run(_ints(args.terms), _strs(args.dtype), ops, args.samples, args.seed, backend,
                      progress=not args.no_progress)
    header = {"command": "python -m expansions verify " + " ".join(sys.argv[2:]), "samples": args.samples,
              "seed": args.seed, "backend": backend}
    header.update(environment())
    text = verify.markdown(rows, header)
    print(text)
    if args.out:
        out = verify.write(rows, header, args.out)
        print(f"wrote {out / 'verification.md'} and {out / 'verification.json'}")
    bad = sum(r.violations for r in rows) + sum(r.property_violations for r in rows if r.operation == "renormalize")
    return 1 if bad else 0


def _load(spec: str):
    """``MODULE:NAME`` (a dotted module, or a path to a .py file) -> (the object, its module)."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise ValueError(f"expected MODULE:FUNCTION, not {spec!r}")
    if where.endswith(".py"):
        mspec = importlib.util.spec_from_file_location(Path(where).stem, where)
        module = importlib.util.module_from_spec(mspec)
        mspec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, name), module


def cmd_tune(args) -> int:
    try:
        fn, module = _load(args.program)
        sampler = getattr(module, args.samples or f"{args.program.rpartition(':')[2]}_samples")
    except (ValueError, ImportError, AttributeError, OSError) as exc:
        print(f"tune: {exc}", file=sys.stderr)
        return 2
    if args.device == "cuda" and not gpu_environment().get("gpu_available", False):
        print("tune: --device cuda needs a CUDA GPU visible to CuPy", file=sys.stderr)
        return 2
    samples = tuple(a.to_device(args.device) if isinstance(a, ExpansionArray) else a for a in sampler())
    try:
        tuned = tuning.tune(fn, *samples, rel_error=args.rel_error, repeats=args.repeats)
    except ValueError as exc:
        print(f"tune: {exc}", file=sys.stderr)
        return 1
    print(f"# {args.program} tuned for a relative error of {args.rel_error:g} ({args.device})\n")
    print(tuned.report.markdown())
    return 0


def cmd_docs(args) -> int:
    """Build the documentation site (Sphinx, the ``docs`` extra) into docs/_build/html, warnings as
    errors; ``--doctest`` also runs every code example of the pages and ``>>>`` of the docstrings."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "docs" / "conf.py").is_file():
        print(f"docs: the documentation's sources are not beside this package ({root / 'docs'}): "
              "build it from a source checkout", file=sys.stderr)
        return 2
    if importlib.util.find_spec("sphinx") is None or importlib.util.find_spec("myst_parser") is None:
        print('docs: Sphinx and MyST are not installed: pip install -e ".[docs]"', file=sys.stderr)
        return 2
    builders = ["html"] + (["doctest"] if args.doctest else [])
    for builder in builders:
        out = root / "docs" / "_build" / builder
        cmd = [sys.executable, "-m", "sphinx", "-c", str(root / "docs"), "-b", builder, "-W", "--keep-going",
               "-q", str(root), str(out)]
        print(f"docs: {' '.join(cmd[1:])}", flush=True)
        status = subprocess.run(cmd, cwd=root).returncode
        if status:
            print(f"docs: the {builder} build failed (status {status})", file=sys.stderr)
            return status
        print(f"docs: wrote {out}" + ("/docs/index.html" if builder == "html" else "/output.txt"))
    return 0


def cmd_warm(args) -> int:
    """Compile the engine's code for ``--families`` x ``--dtype`` at ``--terms`` into numba's disk cache."""
    reason = backends.cpu_backend_reason()
    if reason is not None:  # the twins run, which compile nothing: not an error
        print(f"warm: nothing to compile, the CPU runs the NumPy twins: {reason}")
        return 0
    families = list(warm.FAMILIES) if args.families == "all" else _strs(args.families)
    try:
        units = warm.units(families, _strs(args.dtype))
    except ValueError as exc:
        print(f"warm: {exc}", file=sys.stderr)
        return 2
    terms = _ints(args.terms)
    print(f"warm: {', '.join(units)} at R = {', '.join(map(str, terms))} in "
          f"{min(args.processes or warm.cores(), len(units))} processes, into {warm.cache_dir()}", flush=True)
    t0 = time.perf_counter()
    done = warm.warm(units, terms, processes=args.processes, progress=not args.no_progress)
    for unit, (wall, cpu) in done.items():
        print(f"  {unit}: {wall:.1f} s ({cpu:.1f} CPU s)")
    print(f"warm: {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m expansions", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="version, backends, formats")
    v = sub.add_parser("verify", help="exact errors against the proven bounds")
    v.add_argument("--terms", default="2,3,4,8,16,32", help="comma-separated R values")
    v.add_argument("--dtype", default="float64,float32", help="float64, float32 or both")
    v.add_argument("--operations", default=",".join(("add_safe", "add_fast", "mul", "renormalize")))
    v.add_argument("--samples", type=int, default=10000, help="cases per (operation, R, dtype)")
    v.add_argument("--seed", type=int, default=2016)
    v.add_argument("--backend", default="auto", choices=("auto", "cpu", "engine", "cuda"),
                   help="cpu: the NumPy twins (the specification); engine: the compiled CPU engine; "
                        "auto: cuda when CuPy sees a GPU, else cpu")
    v.add_argument("--out", default="", help="folder for verification.md and verification.json")
    v.add_argument("--no-progress", action="store_true")
    v.add_argument("--elementary", action="store_true",
                   help="verify the elementary functions against mpmath instead (expansions.verify_elementary)")
    v.add_argument("--functions", default="", help="with --elementary: comma-separated functions (default: all)")
    v.add_argument("--samples-by-terms", default="",
                   help="with --elementary: random cases per row for some R, e.g. '8:3000,16:1000,32:300' "
                        "(the others: --samples)")
    t = sub.add_parser("tune", help="lower the precision of a program's operations within an error threshold")
    t.add_argument("program", help="MODULE:FUNCTION or path/to/file.py:FUNCTION, a function of expansions")
    t.add_argument("--rel-error", type=float, required=True, help="largest relative error allowed")
    t.add_argument("--samples", default="", help="function of the module returning the sample arguments "
                                                 "(default FUNCTION_samples)")
    t.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    t.add_argument("--repeats", type=int, default=3)
    d = sub.add_parser("docs", help="build the documentation site into docs/_build/html (the docs extra)")
    d.add_argument("--doctest", action="store_true", help="also run every code example as a doctest")
    w = sub.add_parser("warm", help="compile the CPU engine's code into numba's disk cache, once, ahead of use")
    w.add_argument("--families", default=",".join(warm.DEFAULT_FAMILIES),
                   help=f"comma-separated, of {', '.join(warm.FAMILIES)}; or all (default: %(default)s)")
    w.add_argument("--dtype", default=",".join(warm.DEFAULT_DTYPES),
                   help="float64, float32 or both (default: %(default)s)")
    w.add_argument("--terms", default=",".join(map(str, warm.DEFAULT_TERMS)),
                   help="comma-separated R values (default: %(default)s)")
    w.add_argument("--processes", type=int, default=None, help="compiling processes (default: one per core)")
    w.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    return {"info": cmd_info, "verify": cmd_verify, "tune": cmd_tune, "docs": cmd_docs,
            "warm": cmd_warm}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
