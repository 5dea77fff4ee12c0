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
