"""A measuring child that never reports: it starts a grandchild that sleeps, writes the grandchild's pid
where the test says (`argv[1]`), and sleeps too (`tests/bench/test_w12.py` checks that `run_child`'s
deadline kills both)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(sys.argv[1]).write_text(str(grandchild.pid))
    time.sleep(600)
