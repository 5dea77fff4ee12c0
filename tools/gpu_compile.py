"""The runbook's compile pool and its measurement: ``python tools/gpu_compile.py --stage STAGE`` fills
the disk cache with a stage's kernels, ``--measure`` measures NVRTC's times here (``--help``, and
:mod:`tools.gpu.compilation`, say the rest)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.gpu.compilation import main  # noqa: E402 - after the path set-up above

if __name__ == "__main__":
    sys.exit(main())
