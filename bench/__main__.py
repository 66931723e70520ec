"""`python -m bench [--quick] [--json PATH]`: see `bench.run`."""

from __future__ import annotations

import sys

from bench.run import main

sys.exit(main())
