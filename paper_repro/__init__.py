"""Reproductions of the seed papers' tables, run by ``python -m paper_repro``.

One module per seed: :mod:`paper_repro.collange2016` (Tables I-IV of the primary paper: Mop/s of the
parallel and sequential expansion algorithms), and the double-word seeds' modules.  The papers'
figures are read from the CSV files in ``paper_repro/anchors/`` (copied from the project's anchors,
each with its citation in its header); ours are measured by the code here, on the GPU when CuPy sees
one and on the CPU otherwise, and labelled with the device they were measured on.
"""
