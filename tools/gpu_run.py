"""The GPU runbook's command line: ``python tools/gpu_run.py --stage first|second|third [--dry-run] OUT``
(``--help``, and :mod:`tools.gpu.run`, say the rest; the runbook lives in ``tools/gpu/``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.gpu.run import main  # noqa: E402 - after the path set-up above

if __name__ == "__main__":
    sys.exit(main())
