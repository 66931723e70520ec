"""The docs site builds with `mkdocs build --strict`: no broken link or anchor, no page missing from the
nav (mkdocs.yml sets every validation to warn, and strict turns a warning into a failure)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docs.fences import DOCS, ROOT


def test_mkdocs_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    for page in DOCS.glob("*.md"):
        built = tmp_path / "site" / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), f"{page.name} was not built"
