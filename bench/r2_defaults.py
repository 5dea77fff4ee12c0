"""Which R = 2 algorithm is the fastest with a proven bound, per operation, on this machine.

Times the parallel kernels' twins at R = 2 and the double-word algorithms (JMP 2017) on N random
double-words, median of repeats, and writes ``bench/results/r2_defaults_<device>.md`` / ``.json``.
``expansions.dispatch.R2_DEFAULTS`` records the choice this measurement supports (see its comment).

    python -m bench.r2_defaults [--n 1000000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from expansions import bounds
from expansions.__main__ import device_slug, environment
from expansions.cpu import kernels as K
from expansions.dw import cpu as D
from expansions.dw.bounds import bound as dw_bound
from expansions.generate import random_terms

CANDIDATES = {
    "add": {"add_safe (parallel, Alg. 1)": lambda x, y: K.add_safe(x, y, 2),
            "dw_add_accurate (JMP 6)": lambda x, y: D.dw_add_accurate(x[:, 0], x[:, 1], y[:, 0], y[:, 1])},
    "mul": {"mul_truncated (parallel, Alg. 2)": lambda x, y: K.mul_truncated(x, y, 2),
            "dw_times_dw1 (JMP 10)": lambda x, y: D.dw_times_dw1(x[:, 0], x[:, 1], y[:, 0], y[:, 1]),
            "dw_times_dw2 (JMP 11)": lambda x, y: D.dw_times_dw2(x[:, 0], x[:, 1], y[:, 0], y[:, 1]),
            "dw_times_dw3 (JMP 12)": lambda x, y: D.dw_times_dw3(x[:, 0], x[:, 1], y[:, 0], y[:, 1])},
    "div": {"dw_div_dw1 (JMP 16)": lambda x, y: D.dw_div_dw1(x[:, 0], x[:, 1], y[:, 0], y[:, 1]),
            "dw_div_dw2 (JMP 17)": lambda x, y: D.dw_div_dw2(x[:, 0], x[:, 1], y[:, 0], y[:, 1]),
            "dw_div_dw3 (JMP 18)": lambda x, y: D.dw_div_dw3(x[:, 0], x[:, 1], y[:, 0], y[:, 1])},
}


def _bound_u2(name: str, dtype: str) -> float | None:
    """The proven relative bound in units of u^2 (for the multiplication, relative to |x0 y0|)."""
    p = 53 if dtype == "float64" else 24
    key = name.split(" ")[0]
    b = {"add_safe": lambda: bounds.add_safe(2, p), "mul_truncated": lambda: bounds.mul_truncated(2, p)}.get(
        key, lambda: dw_bound(key, p))()
    return None if b is None else float(b.value * 2 ** (2 * p))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    env = environment()
    rows = []
    for dtype in ("float64", "float32"):
        x = random_terms((args.n,), 2, dtype, seed=1)
        y = random_terms((args.n,), 2, dtype, seed=2)
        for op, cands in CANDIDATES.items():
            for name, f in cands.items():
                with np.errstate(all="ignore"):
                    f(x, y)
                    secs = []
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        f(x, y)
                        secs.append(time.perf_counter() - t0)
                rows.append({"dtype": dtype, "operation": op, "algorithm": name, "seconds": secs,
                             "mops": args.n / statistics.median(secs) / 1e6, "bound_u2": _bound_u2(name, dtype)})
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    stem = f"r2_defaults_{'gpu-' if env.get('gpu_available') else ''}{device_slug()}"
    (out / f"{stem}.json").write_text(json.dumps({"environment": env, "n": args.n, "rows": rows}, indent=1))
    lines = [f"# R = 2 algorithms on {env.get('gpu_name') or env['processor']} (NumPy twins, CPU)", "",
             f"`python -m bench.r2_defaults --n {args.n} --repeats {args.repeats}`, commit {env['commit']}.", "",
             "| dtype | operation | algorithm | Mop/s (median) | proven bound (u^2) |", "|---|---|---|---|---|"]
    for r in rows:
        b = "-" if r["bound_u2"] is None else f"{r['bound_u2']:.4g}"
        lines.append(f"| {r['dtype']} | {r['operation']} | {r['algorithm']} | {r['mops']:.3g} | {b} |")
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
