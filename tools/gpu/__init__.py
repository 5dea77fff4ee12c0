"""The GPU first-contact runbook: two stages of at most 7 minutes each on a lent GPU machine, planned,
estimated and rehearsed here without a GPU (docs/gpu_first_contact.md).

Command lines (in ``tools/``, each a thin entry into this package): ``gpu_run.py`` (the stages, their
dry runs and rehearsals, ``--measure-cpu``), ``gpu_compile.py`` (the compile pool, ``--measure``),
``gpu_launch_each.py`` (the launches compute-sanitizer watches).  The committed measurements the
estimates read are in ``tools/gpu_budget/``.

Modules, each importing only those above it:

=================  ====================================================================================
``common``         paths, fixed costs, a part's :class:`~tools.gpu.common.Context` and
                   :class:`~tools.gpu.common.Part`, the committed measurements, the pools' schedule, the
                   bit comparison of results
``units``          compile units (NVRTC programs, numba warm-ups) and the traced programs' kernel text
``inputs``         the input families shared with the tests (``tests/test_gpu.py``,
                   ``tests/test_elementary_emulated.py``)
``devices``        the GPU through CuPy, or the rehearsal's twins
``launch_each``    one launch of every kernel against its twin (under compute-sanitizer)
``families``       the kernel families of the bit-exactness comparison
``bitexact``       parts ``bitexact``, ``bitexact_exp``: the comparison, its CPU pool
``elementary``     part ``elementary``
``environment``    part ``env``
``timings``        parts ``tables``, ``r2``, ``stream``, ``model``, ``model_rest``, ``characterize``
``sanitizer``      parts ``sanitizer``, ``synccheck``
``verification``   parts ``verify``, ``verify_full_*``
``suites``         parts ``gpu_tests``, ``paper_repro``
``stages``         the stages' parts in their order
``compilation``    the compile pool, its estimate and its measurement
``measure_cpu``    the CPU side of the estimates, measured here (``--measure-cpu``)
``run``            the driver: plan, dry run, a stage's run, one part's process
=================  ====================================================================================
"""
