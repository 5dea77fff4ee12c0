"""``python -m bench.model``: :func:`bench.model.cli.main`."""

import sys

from bench.model.cli import main

sys.exit(main())
