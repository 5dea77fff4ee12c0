"""expansions.tune on a GPU: the search runs on the device (one kernel per program where the graph has
one format, the planned kernels per operation where the tuned graph mixes formats), the launch
configuration is chosen from the occupancy calculator's formulas with ties measured, and the tuned
program gives the bits of the same program on the CPU.  Needs a CUDA GPU visible to CuPy."""

from __future__ import annotations

import numpy as np
import pytest

from expansions import cuda

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda.available(),
                       reason="no CUDA GPU visible to CuPy (expansions.cuda.available() is False)"),
]


def _on(args, device):
    return tuple(a.to_device(device) for a in args)


def test_tuned_on_the_gpu_equals_the_cpu():
    import expansions as ex
    from expansions.programs import Program
    from paper_repro.seed004_tuning import axpc, axpc_samples

    samples = _on(axpc_samples(4096), "cuda")
    tuned = ex.tune(axpc, *samples, rel_error=2.0 ** -200, check_time=False, bound_elements=8)
    r = tuned.report
    assert r.launch is not None or "one kernel per operation" in r.launch_note
    fresh = axpc_samples(10_000, seed=11)
    got = tuned(*_on(fresh, "cuda")).to_device("cpu")
    want = Program(axpc, overrides=tuned.overrides)(*fresh)
    assert np.array_equal(np.asarray(got.terms), np.asarray(want.terms))


def test_block_sizes_give_the_same_bits_and_the_choice_is_measured():
    from expansions import tuning
    from expansions.programs import Program
    from paper_repro.seed004_tuning import axpc, axpc_samples

    samples = _on(axpc_samples(50_000), "cuda")
    outs = [Program(axpc, block=b)(*samples).terms.get() for b in (32, 64, 256, 1024)]
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
    choice, note = tuning.launch_choice(axpc, {}, samples)
    assert note == "" and choice.limits.name.endswith("(device 0)")
    assert choice.how in ("only one", "measured") and (choice.how == "only one" or choice.seconds)
