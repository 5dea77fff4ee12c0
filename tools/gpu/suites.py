"""The third stage's parts that run the project's own suites on the GPU: the GPU tests
(``gpu_tests``: ``pytest -m gpu``) and the paper reproduction (``paper_repro``: ``python -m
paper_repro --backend cuda`` at full size, its folder packed as ``paper_repro.tar.gz``)."""

from __future__ import annotations

import sys
import tarfile
import tempfile
from pathlib import Path

from .common import Context, part, run_command

PARTS: dict = {}


@part(PARTS, "gpu_tests", "third",
      "the GPU test suite (pytest -m gpu, 16 workers): every kernel against its twin at the "
      "tests' sizes", estimate=lambda b: {"seconds": None, "detail": "not sized: compiles every instance the GPU "
                                          "tests use (thousands); run alone, with the stage's limit"})
def run_gpu_tests(ctx: Context):
    rec = run_command(ctx, [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-n", "16", "-p",
                            "no:cacheprovider", "tests"], "pytest -m gpu")
    ctx.save("gpu_tests", rec | {"part": "gpu_tests"})


@part(PARTS, "paper_repro", "third",
      "the main job on the GPU (python -m paper_repro --backend cuda, full sizes: Tables "
      "I-IV with streaming and aims, the verification at 10^4 samples, the double-word and seed reproductions), its "
      "folder packed as paper_repro.tar.gz",
      estimate=lambda b: {"seconds": None, "detail": "not sized: its parts were 9-minute phases of the old runbook"})
def run_paper_repro(ctx: Context):
    with tempfile.TemporaryDirectory(prefix="expansions-paper-") as tmp:
        rec = run_command(ctx, [sys.executable, "-m", "paper_repro", "--backend", "cuda", "--no-progress", "--out",
                                tmp], "python -m paper_repro")
        if any(Path(tmp).iterdir()):
            with tarfile.open(ctx.out / "paper_repro.tar.gz", "w:gz") as tar:
                tar.add(tmp, arcname="paper_repro")
    ctx.save("paper_repro", rec | {"part": "paper_repro"})
