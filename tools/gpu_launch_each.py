"""Small launches of every kernel, for compute-sanitizer (the runbook's ``sanitizer`` and
``synccheck`` parts): ``python tools/gpu_launch_each.py [--one-per-family]``
(:mod:`tools.gpu.launch_each`)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.gpu.launch_each import main  # noqa: E402 - after the path set-up above

if __name__ == "__main__":
    sys.exit(main())
