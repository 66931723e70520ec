"""The README's path, for real: a clone, `pip install .` (not editable), then `manage.py` and `flowdeck`.

Both must see one SQLite file, `db.sqlite3` in the project folder, and an unmigrated one is refused in one
line saying to migrate. Affordable and honest: the package is built into a wheel by its own
pyproject.toml and installed non-editable with `pip install --no-deps --target` (the dependencies are the
test venv's, already installed); that folder on PYTHONPATH stands in for the venv's site-packages, and its
`bin/flowdeck` is the console script pip wrote. The clone is a copy of the worktree's sources.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.acceptance.support import CALL_TIMEOUT, PYTHON, ROOT, Result, ok

pytestmark = pytest.mark.slow

SOURCES = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "manage.py",
    "public",
    "console",
    "engine",
    "store",
    "templates",
    "static",
    "examples",
)
ORDER = {"id": "o-installed", "customer": "ada", "items": [{"sku": "widget", "qty": 1, "price": 400}]}


@dataclass(frozen=True)
class Installed:
    project: Path  # the clone: manage.py and the sources, where the user types commands
    site: Path  # what `pip install .` put in site-packages

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}}
        return env | {"PYTHONPATH": str(self.site), "PYTHONUNBUFFERED": "1"}

    def run(self, argv: Sequence[str]) -> Result:
        done = subprocess.run(
            list(argv),
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT,
            check=False,
        )
        return Result(tuple(argv), done.returncode, done.stdout, done.stderr)

    def manage(self, *args: str) -> Result:
        return self.run([PYTHON, "manage.py", *args])

    def flowdeck(self, *args: str) -> Result:
        return self.run([str(self.site / "bin" / "flowdeck"), *args])


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("installed")
    project, site = root / "project", root / "site"
    project.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.sqlite3*", "*.egg-info", "build")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, project / name)
    target = ("--target", str(site), str(project))
    done = subprocess.run(
        [PYTHON, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", *target],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "bin" / "flowdeck").is_file()
    return Installed(project, site)


def test_flowdeck_runs_the_installed_package_not_the_clone(installed: Installed) -> None:
    where = ok(installed.flowdeck("shell", "-c", "import flowdeck.console; print(flowdeck.console.__file__)"))
    assert where.stdout.splitlines()[-1] == str(installed.site / "flowdeck" / "console" / "__init__.py")


def test_flowdeck_and_manage_py_share_the_project_folders_database(installed: Installed) -> None:
    database = installed.project / "db.sqlite3"
    migrate = "run `python manage.py migrate` (or `flowdeck migrate`) first"
    # before migrate: both name the same file, in one line, exit 2
    for before in (installed.flowdeck("ls"), installed.manage("flowdeck", "ls")):
        assert before.returncode == 2, before.explain()
        line, _, rest = before.stderr.partition("\n")
        assert (line.startswith(f"CommandError: the database {database} is not migrated"), rest) == (True, "")
        assert line.endswith(migrate), before.explain()

    ok(installed.flowdeck("migrate", "-v", "0"))
    ok(
        installed.manage(
            "flowdeck", "start", "fulfilment", "--id", "by-manage", "--input", f"order={json.dumps(ORDER)}"
        )
    )
    ok(
        installed.flowdeck(
            "start", "fulfilment", "--id", "by-flowdeck", "--input", f"order={json.dumps(ORDER)}"
        )
    )
    for seen in (installed.flowdeck("ls", "--json"), installed.manage("flowdeck", "ls", "--json")):
        assert sorted(i["execution_id"] for i in ok(seen).json()["items"]) == ["by-flowdeck", "by-manage"]
    assert database.is_file()
    assert list(installed.site.rglob("*.sqlite3")) == []  # nothing beside the installed package
