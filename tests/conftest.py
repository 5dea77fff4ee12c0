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
    """With ``--numba-compiles``, listen to numba's compilations (each process: the workers too).  With
    xdist workers, fill numba's disk cache first (tests/warm_numba.py: its units in one process per
    core), so that the workers do not each compile the engine's loops.  EXPANSIONS_WARM_NUMBA=0 skips it."""
    import subprocess

    if config.getoption("--numba-compiles") is not None:
        _listen_to_numba_compiles()
    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not workers or os.environ.get("EXPANSIONS_WARM_NUMBA") == "0":
        return
    from expansions import engine

    if not engine.available():
        return
    # check=False: a unit that fails to compile fails again, with its test's name, in the tests
    subprocess.run([sys.executable, str(Path(__file__).parent / "warm_numba.py")], check=False)


# --cpu-durations=N: the N tests that took the most CPU time (this process and the processes it
# waited for: g++, example scripts), beside pytest's --durations (wall time, which a shared machine
# inflates).  With xdist each worker reports its own tests, in the workers' output.
import resource  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import pytest  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="print the N tests that used the most CPU seconds (with children), 0 for all")
    parser.addoption("--numba-compiles", type=int, default=None, metavar="N",
                     help="print the N numba compilations (function and argument types) that took the most "
                          "CPU seconds, with the workers that compiled each, 0 for all")


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_CPU: dict = {}
_START = pytest.StashKey()


# --numba-compiles=N: numba's compilations during the tests (numba's "numba:compile" events, the
# outermost of nested ones, in CPU seconds of the compiling process), per function and argument types,
# with the workers that compiled each: a loop compiled by every worker is one for tests/warm_numba.py.
_COMPILES: dict = {}  # (function, argument types) -> [CPU seconds, set of workers]
_PENDING: list = []  # this process's compilations since the last report: (function, types, seconds)


def _listen_to_numba_compiles() -> None:
    from numba.core import event  # numba only with --numba-compiles

    class Compiles(event.Listener):
        depth, start = 0, 0.0

        def on_start(self, ev):
            if self.depth == 0:
                self.start = time.process_time()
            self.depth += 1

        def on_end(self, ev):
            self.depth -= 1
            if self.depth == 0:
                fn = ev.data["dispatcher"].py_func
                _PENDING.append((f"{fn.__module__}.{fn.__qualname__}", str(ev.data.get("args")),
                                 time.process_time() - self.start))

    event.register("numba:compile", Compiles())


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
    if _PENDING:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        item.user_properties.append(("numba_compiles", [(f, a, s, worker) for f, a, s in _PENDING]))
        _PENDING.clear()


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        for key, value in report.user_properties:
            if key == "cpu_seconds":
                _CPU[report.nodeid] = tuple(value)
            elif key == "numba_compiles":
                for f, a, seconds, worker in value:
                    entry = _COMPILES.setdefault((f, a), [0.0, set()])
                    entry[0] += seconds
                    entry[1].add(worker)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    k = config.getoption("--numba-compiles")
    if k is not None:
        rows = sorted(_COMPILES.items(), key=lambda kv: -kv[1][0])
        total = sum(v[0] for v in _COMPILES.values())
        terminalreporter.write_sep("=", f"numba compilations during the tests: {len(rows)}, {total:.1f} CPU s in all")
        for (f, a), (seconds, workers) in rows[: k or None]:
            terminalreporter.write_line(f"{seconds:8.2f} s  {','.join(sorted(workers)):9}  {f} {a[:150]}")
    n = config.getoption("--cpu-durations")
    if n is None or not _CPU:
        return
    rows = sorted(_CPU.items(), key=lambda kv: -kv[1][0])
    total = sum(c for c, _ in _CPU.values())
    terminalreporter.write_sep("=", f"CPU seconds of {len(rows)} tests: {total:.1f} in all")
    for nodeid, (cpu, wall) in rows[: n or None]:
        terminalreporter.write_line(f"{cpu:8.2f} cpu {wall:8.2f} wall  {nodeid}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """An xdist worker under ``--dist loadgroup`` checks that its grouped tests carry their group (the
    ``@name`` suffix xdist's scheduler reads): pytest 9.2 drops it (pytest-xdist issue 1386), and the
    groups then spread over every worker, so that each worker builds the same compiled libraries and
    compiles every NVRTC instance again (CI took twice as long).  pyproject pins pytest below 9.2;
    elsewhere this warns."""
    if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
        return
    lost = [item.nodeid for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        warnings.warn(f"--dist loadgroup: {len(lost)} grouped tests lost their group (e.g. {lost[0]}): this "
                      f"pytest ({pytest.__version__}) breaks xdist's loadgroup; install pytest<9.2", stacklevel=1)
