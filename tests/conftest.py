"""Test configuration: the helpers' folder on the path, and hypothesis profiles.

Profiles (``HYPOTHESIS_PROFILE``): ``dev``, the default, runs a fifth of each property test's
examples (``helpers.examples``) so that ``bash run.sh test`` stays short; ``ci`` (``bash run.sh test
--all``, CI) runs them all.  A failure found in either is replayed from hypothesis' database.
"""

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config):
    """With xdist workers, fill numba's disk cache first (tests/warm_numba.py: its units spread over one
    process per core, in parallel), so that the workers do not each compile the engine's loops.
    EXPANSIONS_WARM_NUMBA=0 skips it."""
    import subprocess

    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not workers or os.environ.get("EXPANSIONS_WARM_NUMBA") == "0":
        return
    from expansions import engine

    if not engine.available():
        return
    from warm_numba import spread  # beside this file; imports the library (numba), so only when warming

    script = str(Path(__file__).parent / "warm_numba.py")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    procs = [subprocess.Popen([sys.executable, script, *units]) for units in spread(cores)]
    for p in procs:
        p.wait()


# --cpu-durations=N: the N tests that took the most CPU time (this process and the processes it
# waited for: g++, example scripts), beside pytest's --durations (wall time, which a shared machine
# inflates).  With xdist each worker reports its own tests, in the workers' output.
import resource  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="print the N tests that used the most CPU seconds (with children), 0 for all")


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_CPU: dict = {}
_START = pytest.StashKey()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    if item.config.getoption("--cpu-durations") is not None:
        item.stash[_START] = (_cpu_seconds(), time.perf_counter())
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if _START in item.stash:  # in the teardown report, which xdist sends from the worker
        cpu, wall = item.stash[_START]
        item.user_properties.append(("cpu_seconds", (_cpu_seconds() - cpu, time.perf_counter() - wall)))


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        for key, value in report.user_properties:
            if key == "cpu_seconds":
                _CPU[report.nodeid] = tuple(value)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = config.getoption("--cpu-durations")
    if n is None or not _CPU:
        return
    rows = sorted(_CPU.items(), key=lambda kv: -kv[1][0])
    total = sum(c for c, _ in _CPU.values())
    terminalreporter.write_sep("=", f"CPU seconds of {len(rows)} tests: {total:.1f} in all")
    for nodeid, (cpu, wall) in rows[: n or None]:
        terminalreporter.write_line(f"{cpu:8.2f} cpu {wall:8.2f} wall  {nodeid}")
