"""Helpers every benchmark of bench/ shares: the machine's CPU model, a log that is also printed, and the
note on the machine's load."""

import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def log_to(path):
    """A ``say(line)`` that prints the line and appends it to the file ``path`` (created anew), flushed at
    once, so that a benchmark's raw output is kept even when it is interrupted."""
    log = open(path, "w")

    def say(s):
        print(s, flush=True)
        log.write(s + "\n")
        log.flush()

    return say


def load_note(load, cores: int) -> str:
    """How busy the machine was during a run, from the load averages (1, 5 and 15 minutes) a benchmark
    recorded at its start and end (``load``: {"start": [...], "end": [...]}, None for a run that kept
    none): said, not assumed, since a shared machine and a quiet one give different figures."""
    if not load:
        return "the machine's load was not recorded in this run"
    start, end = (" / ".join(f"{v:.2f}" for v in load[k]) for k in ("start", "end"))
    busy = max(load["start"][0], load["end"][0]) > cores
    return (f"load average (1 / 5 / 15 min) {start} at the start and {end} at the end, on {cores} cores"
            + ("; above the core count: other work shared the machine, and the all-core figures are the "
               "least reliable" if busy else ""))
