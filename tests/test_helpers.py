"""The test helpers' emulator cache (helpers.emulated_library): a library is keyed by its source, so
a changed source is compiled anew and an unchanged one is loaded, not compiled again."""

from __future__ import annotations

import shutil

import pytest
from helpers import emulated_library

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed to build the warp emulator")


def test_the_cache_is_keyed_by_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPANSIONS_EMULATOR_CACHE", str(tmp_path))
    one = emulated_library('extern "C" int value() { return 1; }\n', name="key")
    two = emulated_library('extern "C" int value() { return 2; }\n', name="key")
    assert (one.value(), two.value()) == (1, 2)
    libraries = sorted(tmp_path.glob("libkey_*.so"))
    assert len(libraries) == 2
    stamps = [p.stat().st_mtime_ns for p in libraries]
    again = emulated_library('extern "C" int value() { return 2; }\n', name="key")
    assert again.value() == 2
    assert sorted(tmp_path.glob("libkey_*.so")) == libraries
    assert [p.stat().st_mtime_ns for p in libraries] == stamps  # loaded, not compiled again
    assert not list(tmp_path.glob("*.cpp")) and not list(tmp_path.glob("*.tmp"))


def test_a_compile_error_leaves_no_library(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setenv("EXPANSIONS_EMULATOR_CACHE", str(tmp_path))
    with pytest.raises(subprocess.CalledProcessError):
        emulated_library("this is not C++\n", name="bad")
    assert not list(tmp_path.glob("libbad_*"))
