"""The `flowdeck` console script in a host project's folder is that project's `manage.py` (issue 28: it
ran Flowdeck's own settings unless `PYTHONPATH=.` was set).

A fresh `django-admin startproject myshop` with an app `orders` (its `flows.py`) and Flowdeck's two apps;
`flowdeck` runs there with no PYTHONPATH: with `DJANGO_SETTINGS_MODULE`, and without it (the module the
folder's `manage.py` names). Both it and `manage.py` see the project's apps and its one database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowdeck.console import cli

FLOWDECK_SCRIPT = Path(sys.executable).parent / "flowdeck"
DJANGO_ADMIN = Path(sys.executable).parent / "django-admin"
FLOWS = """
from flowdeck import Flow

FLOWS = [Flow.init("pack").output("box", lambda ctx: 1, type=int)]
"""


def _run(project: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    # as a user's shell has it: nothing of this suite's (pytest-django's DJANGO_SETTINGS_MODULE, the
    # checkout on PYTHONPATH, the suite's secret key)
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "FLOWDECK_SECRET_KEY", "DATABASE_URL"}
    }
    done = subprocess.run(
        argv, cwd=project, env=clean | env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("myshop")
    _run(folder, [str(DJANGO_ADMIN), "startproject", "myshop", "."])
    _run(folder, [sys.executable, "manage.py", "startapp", "orders"])
    (folder / "orders" / "flows.py").write_text(FLOWS)
    with (folder / "myshop" / "settings.py").open("a") as settings:
        settings.write(
            "\nINSTALLED_APPS += [\n"
            '    "orders",\n'
            '    "flowdeck.store.django.apps.FlowStoreConfig",\n'
            '    "flowdeck.console.apps.ConsoleConfig",\n'
            "]\n"
        )
    return folder


def _flowdeck(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return _run(project, [str(FLOWDECK_SCRIPT), *args], **env)


def test_flowdeck_in_a_project_folder_is_its_manage_py(project: Path) -> None:
    where = "from django.conf import settings as s; print(s.SETTINGS_MODULE, s.DATABASES['default']['NAME'])"
    expected = f"myshop.settings {project / 'db.sqlite3'}"
    for env in ({"DJANGO_SETTINGS_MODULE": "myshop.settings"}, {}):  # named, then manage.py's default
        said = _flowdeck(project, "shell", "-c", where, **env).stdout.splitlines()[-1]
        assert said == expected, env

    _flowdeck(project, "migrate", "-v", "0")
    _flowdeck(project, "start", "pack", "--id", "by-flowdeck", DJANGO_SETTINGS_MODULE="myshop.settings")
    _run(project, [sys.executable, "manage.py", "flowdeck", "start", "pack", "--id", "by-manage"])
    for listing in (
        _flowdeck(project, "ls", "--json").stdout,
        _run(project, [sys.executable, "manage.py", "flowdeck", "ls", "--json"]).stdout,
    ):
        assert sorted(i["execution_id"] for i in json.loads(listing)["items"]) == ["by-flowdeck", "by-manage"]
    assert sorted(p.name for p in project.glob("*.sqlite3")) == ["db.sqlite3"]


@pytest.mark.parametrize(
    ("manage_py", "settings"),
    [
        (
            'import os\nos.environ.setdefault("DJANGO_SETTINGS_MODULE", "myshop.settings")\n',
            "myshop.settings",
        ),
        ("import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', name)\n", None),  # not a literal
        ("import os\n", None),
        ("def (:\n", None),
    ],
)
def test_the_settings_a_manage_py_names(tmp_path: Path, manage_py: str, settings: str | None) -> None:
    (tmp_path / "manage.py").write_text(manage_py)
    assert cli.settings_module_of(tmp_path / "manage.py") == settings
    assert cli.settings_module_of(tmp_path / "absent.py") is None
