"""The instruction model of the kernels (``python -m bench.model``, :mod:`bench.model.cli`): an upper
bound of each kernel's Mop/s on an H100 SXM and an H200 from its compiled SASS, without a GPU.

* :mod:`bench.model.votes`: the votes of the kernels' data-dependent code, warp by warp, and the floor,
  counted while the CPU twins run on the benchmark's inputs (through :mod:`expansions.cpu.lanes`);
* :mod:`bench.model.core`: the cells, the walk of each one's SASS (:mod:`bench.sass`) with those votes,
  the bound per device, the floor per operation, the R = 2 double-word cells' fields;
* :mod:`bench.model.report`: the markdown report;
* :mod:`bench.model.cli`: the command line, the JSON's metadata.

The names below are what the tools and the tests use.
"""

from bench.model.cli import OUTPUT, main, meta
from bench.model.core import DEVICES, DTYPES, DW_OPS, FPMP, RATES, RS, cells, floor_per_op, model_cell, run
from bench.model.report import markdown
from bench.model.votes import Votes, record, summary, vote_sequences

__all__ = ["DEVICES", "DTYPES", "DW_OPS", "FPMP", "OUTPUT", "RATES", "RS", "Votes", "cells", "floor_per_op", "main",
           "markdown", "meta", "model_cell", "record", "run", "summary", "vote_sequences"]
