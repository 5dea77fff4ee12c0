"""The GPU runbook (tools/gpu_run.py) without a GPU: its dry run plans every phase, a real run skips
each phase with its reason, and the launch-each-kernel script's calls have the twins' signatures."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_launch_each  # noqa: E402
import gpu_run  # noqa: E402

from expansions import backends, dispatch  # noqa: E402
from expansions.cuda import build, dw_kernels  # noqa: E402
from expansions.dw import cpu as dw_twins  # noqa: E402


def test_dry_run_plans_every_phase(tmp_path, capsys):
    assert gpu_run.main([str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    for phase in gpu_run.PHASES:
        assert f"[{phase}]" in out
    assert not any(tmp_path.iterdir())  # a dry run writes nothing


def test_phases_skip_cleanly_without_a_gpu(tmp_path):
    if backends.gpu_environment().get("gpu_available"):
        return  # with a GPU the phases run for real (tools/gpu_run.py on the GPU machine)
    assert gpu_run.main([str(tmp_path), "--phase", "tests", "--phase", "sanitizer", "--phase", "env"]) == 0
    assert (tmp_path / "tests" / "skipped.txt").read_text().strip()
    assert (tmp_path / "env" / "env.json").exists()


def test_launch_each_covers_every_kernel_with_the_twins_signatures():
    """The sanitizer's script, run with the twins in place of the launchers, agrees with itself: every
    call it makes has the right arguments for its kernel."""
    def with_renormalize(name, op):
        twin = gpu_launch_each._twin(name)
        if not op.renormalizes:
            return twin
        ren = dispatch.renormalizer("newton" if op.newton else "safe", backends.cpu)

        def launcher(*args, renormalize=False):  # a launcher's keyword: the twin, then renormalize
            out = twin(*args)
            return ren(out, args[-1]) if renormalize else out

        return launcher

    twins = {name: with_renormalize(name, op) for name, op in build.OPERATIONS.items() if op.params != "RC"}

    def dw_run(name, *ops):
        hi, lo = getattr(dw_twins, name)(*gpu_launch_each.columns(ops))
        return np.stack([hi, lo], axis=1)

    kinds = dw_kernels.library_algorithms()

    def dw_operation(name, x, y=None, negate_y=False, renormalize=False):  # dw_kernels.operation's signature
        op = "sub" if negate_y else kinds[name]
        return dispatch.run(op, name, backends.cpu, renormalize, *((x, 2) if y is None else (x, y, 2)))

    assert gpu_launch_each.check_all(twins, np.asarray, np.asarray, backends.cpu.reduce, dw_run, dw_operation) == []
