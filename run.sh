#!/usr/bin/env bash
# The two commands of the README:
#   bash run.sh         set up .venv and run the main job, python -m paper_repro: the paper's Tables
#                       I-IV beside our measurements, the plot, the bound verification table and one
#                       seed's application (on the GPU when CuPy sees one, else on the CPU; a few
#                       minutes on a 2-core CPU), written to paper_repro/results/<device>/;
#                       bash run.sh --full: every part at full size, every seed (about half an hour)
#   bash run.sh test    set up .venv and run the default test selection (tests marked slow left out;
#                       a few minutes on 2 cores); bash run.sh test --all: every test, with the large
#                       hypothesis profile (what CI runs)
# Further arguments go to python -m paper_repro (e.g. --quick, --full) or to pytest (e.g. -k name).
# numba's compiled code is cached in .venv/numba-cache (NUMBA_CACHE_DIR; the main job fills it first
# with python -m expansions warm, the tests with tests/warm_numba.py), the warp emulator's
# libraries in ~/.cache/expansions/emulator (tests/helpers.py), NVRTC's CUBINs in ~/.cache/expansions.
# Environment: PYTHON (interpreter for the venv, default python3); EXPANSIONS_NVRTC=1 also installs
# CuPy and NVRTC for CUDA 12 without a GPU, so that the kernel compile checks run (CI does this).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
extras="test,plot,dask"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  major=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9]*\).*/\1/p' | head -n 1)
  if [ "${major:-12}" -ge 13 ]; then extras="$extras,cuda13"; else extras="$extras,cuda12"; fi
elif [ "${EXPANSIONS_NVRTC:-0}" = 1 ]; then
  extras="$extras,cuda12"
fi
# --no-compile: no byte-compiling of every installed module (about 8 s); Python compiles what it imports
.venv/bin/python -m pip install -q --no-compile --disable-pip-version-check -e ".[${extras}]"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
mode=main
if [ "${1:-}" = test ] || [ "${1:-}" = main ]; then mode=$1; shift; fi
if [ "$mode" = test ]; then
  # xdist: --dist loadgroup keeps the tests of one xdist_group (one compiled library) on one worker
  if [ "${1:-}" = --all ]; then
    shift
    export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
    exec .venv/bin/python -m pytest -n auto --dist loadgroup -m "" "$@"
  fi
  exec .venv/bin/python -m pytest -n auto --dist loadgroup "$@"
fi
.venv/bin/python -m expansions info
# numba's cache for the library's defaults and the baselines of Tables I-IV, compiled in one process
# per core (a second when the cache is warm)
.venv/bin/python -m expansions warm --families arithmetic,elementary,baselines
.venv/bin/python -m paper_repro "$@"
