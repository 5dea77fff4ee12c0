"""The benchmarks' sentence on the machine's load (bench.load_note): said from what was recorded."""

from bench import load_note


def test_load_note_says_what_was_recorded():
    assert load_note(None, 2) == "the machine's load was not recorded in this run"
    quiet = load_note({"start": [1.0, 1.5, 1.7], "end": [1.9, 1.6, 1.7]}, 2)
    assert "1.00 / 1.50 / 1.70 at the start" in quiet and "1.90 / 1.60 / 1.70 at the end" in quiet
    assert "shared" not in quiet and "on 2 cores" in quiet
    busy = load_note({"start": [1.0, 1.0, 1.0], "end": [6.5, 3.0, 2.0]}, 2)
    assert "other work shared the machine" in busy
