"""The two methods of a 2-D product beside the choice of "auto" (``expansions.reduce.choose_method``).

``ex.dot(A, B, method="elementwise")`` (products and the canonical tree) and ``method="slices"``
(exact slices on the BLAS) on well-scaled random operands for a set of (m, k, n) shapes and R, one
core (``numba.set_num_threads(1)``), the best of 3 calls; beside them the method "auto" picks and
whether it picked the faster one.  The figures behind the element-wise constants of the cost model.

    python -m bench.product_methods [--rs 2,4] [--out bench/results]

writes ``bench/results/product_methods_<device>.md``, ``.json`` and ``.log``.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

import numpy as np

import expansions as ex
from expansions.__main__ import device_slug, environment

SHAPES = ((300, 300, 1), (1, 300, 300), (1000, 1000, 1), (16, 16, 16), (24, 24, 24), (32, 32, 32), (64, 64, 64),
          (128, 128, 128))


def main(argv=None) -> int:
    import numba  # the engine's thread count (numba is the engine's optional dependency)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rs", default="2,4")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args(argv)
    numba.set_num_threads(1)
    stem = Path(args.out) / f"product_methods_{device_slug()}"
    env = environment()
    command = ("python -m bench.product_methods " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    lines, rows = [f"{command}  (commit {env['commit']})"], []
    for R in (int(v) for v in args.rs.split(",")):
        for m, k, n in SHAPES:
            A, B = ex.random((m, k), terms=R, seed=1), ex.random((k, n), terms=R, seed=2)
            ms = {}
            for method in ("elementwise", "slices"):
                f = lambda A=A, B=B, method=method: ex.dot(A, B, method=method)  # noqa: E731
                f()
                ms[method] = min(timeit.repeat(f, number=1, repeat=3)) * 1e3
            auto = ex.reduce.choose_method(m, k, n, R, np.float64)
            rec = {"R": R, "shape": [m, k, n], "ms": ms, "auto": auto, "faster": min(ms, key=ms.get)}
            lines.append(json.dumps(rec))
            print(lines[-1], flush=True)
            rows.append(rec)
    md = ["# 2-D products: the element-wise tree and the exact slices, and the choice of \"auto\"", "",
          f"`{command}` at commit {env['commit']}, one core of {env['processor']}; milliseconds, the best of 3 "
          "calls, well-scaled random operands. Raw output: `" + stem.name + ".log`.", "",
          "| R | m x k x n | elementwise | slices | auto picks | faster |", "|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['R']} | {' x '.join(map(str, r['shape']))} | {r['ms']['elementwise']:.3g} | "
                  f"{r['ms']['slices']:.3g} | {r['auto']} | {r['faster']} |")
    good = sum(r["auto"] == r["faster"] for r in rows)
    md += ["", f"\"auto\" picks the faster method in {good} of {len(rows)} cells.", ""]
    Path(f"{stem}.md").write_text("\n".join(md))
    Path(f"{stem}.json").write_text(json.dumps({"command": command, "environment": env, "rows": rows}, indent=1))
    Path(f"{stem}.log").write_text("\n".join(lines) + "\n")
    print(f"wrote {stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
