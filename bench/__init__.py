

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
