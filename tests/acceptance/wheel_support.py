"""The wheel, built once per test process, and fresh virtualenvs outside the checkout that install it.

A virtualenv gets the wheel alone (`--no-deps`); the dependencies come from the test venv's site-packages,
added as a plain path (its editable finder's .pth files are not run from there, so the checkout cannot
stand in for the installed package). Nothing a process of such a virtualenv runs has the checkout on its
path: `clean_environment` drops PYTHONPATH and the settings the suite's own process may carry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from tests.acceptance.support import ROOT

SOURCES = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "public",
    "console",
    "engine",
    "store",
    "templates",
    "static",
)
RUN_TIMEOUT = 600


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ARGV to its end; a failure shows what it printed."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(root: Path) -> Path:
    """The wheel as `pip wheel` builds it from a copy of the sources (no build folders, no egg-info)."""
    source, dist = root / "source", root / "dist"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.sqlite3*", "*.egg-info", "build")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(ROOT / name, source / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    run([*pip_wheel, "-w", str(dist), str(source)], cwd=root)
    (found,) = dist.glob("flowdeck-*.whl")
    return found


@dataclass(frozen=True)
class Venv:
    folder: Path
    site: Path  # its site-packages, where the wheel went

    @property
    def python(self) -> str:
        return str(self.folder / "bin" / "python")


def install(wheel: Path, folder: Path) -> Venv:
    """A fresh virtualenv at FOLDER with the wheel installed in it (the test venv's pip installs it: a
    venv of its own pip would cost a pip install per test, and changes nothing of what is installed)."""
    run([sys.executable, "-m", "venv", "--without-pip", str(folder)], cwd=folder.parent)
    python = str(folder / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index"]
    run([*pip, str(wheel)], cwd=folder.parent)
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], folder).strip())
    (site / "test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return Venv(folder, site)


def clean_environment(**extra: str) -> dict[str, str]:
    """The suite's environment less what would lead a process back to the checkout or its settings."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "VIRTUAL_ENV"}
        and not name.startswith("FLOWDECK_")
    }
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env
