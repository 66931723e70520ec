"""The wheel holds one package, `flowdeck`, with the console's templates and static files inside it, and a
fresh virtualenv outside the checkout that installs it finds them (issue 28's first item: the documented
install serves the console).

The wheel and the virtualenv are tests/acceptance/wheel_support.py's (the checkout cannot stand in for the
installed package there)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.acceptance import wheel_support

pytestmark = pytest.mark.slow

# What a project that installs the wheel would have (Flowdeck's own settings, less the examples'
# app, which is not installed).
PROJECT_SETTINGS = """
from flowdeck.console.settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if not app.startswith("examples.")]
"""
PROBE = """
import django, flowdeck
from django.contrib.staticfiles import finders
from django.template.loader import get_template

django.setup()
print(flowdeck.__file__)
print(get_template("flowdeck/console/login.html").origin.name)
print(finders.find("flowdeck/console/console.js"))
print(finders.find("flowdeck/vendor/htmx/htmx.min.js"))
print(get_template("admin/flowstore/pagination.html").origin.name)
"""


def test_the_wheel_holds_one_package_with_its_templates_and_static_files(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"flowdeck"}
    assert {
        "flowdeck/__init__.py",
        "flowdeck/engine/flow.py",
        "flowdeck/store/django/migrations/0001_initial.py",
        "flowdeck/console/migrations/0001_initial.py",
        "flowdeck/console/management/commands/flowdeck_workers.py",
        "flowdeck/console/templates/flowdeck/console/login.html",
        "flowdeck/console/templates/flowdeck/admin/console/apitoken/made.html",
        "flowdeck/console/static/flowdeck/console/console.js",
        "flowdeck/console/static/flowdeck/vendor/mermaid/mermaid.min.js",
        "flowdeck/store/django/templates/admin/flowstore/pagination.html",
    } <= set(names)


def test_a_fresh_virtualenv_finds_the_consoles_templates_and_static_files(
    wheel: Path, tmp_path: Path
) -> None:
    venv, project = wheel_support.install(wheel, tmp_path / "venv"), tmp_path / "project"
    project.mkdir()
    (project / "project_settings.py").write_text(PROJECT_SETTINGS)
    env = {
        "DJANGO_SETTINGS_MODULE": "project_settings",
        "FLOWDECK_SECRET_KEY": "wheel-test",
        "PYTHONPATH": ".",
    }
    env["DATABASE_URL"] = f"sqlite:///{project / 'db.sqlite3'}"
    lines = wheel_support.run([venv.python, "-c", PROBE], cwd=project, env=env).splitlines()
    installed = venv.site / "flowdeck"
    assert lines == [
        str(installed / "__init__.py"),
        str(installed / "console" / "templates" / "flowdeck" / "console" / "login.html"),
        str(installed / "console" / "static" / "flowdeck" / "console" / "console.js"),
        str(installed / "console" / "static" / "flowdeck" / "vendor" / "htmx" / "htmx.min.js"),
        str(installed / "store" / "django" / "templates" / "admin" / "flowstore" / "pagination.html"),
    ]
    collectstatic = [venv.python, "-m", "django", "collectstatic", "--noinput", "-v", "0"]
    collected = wheel_support.run(collectstatic, project, env)
    assert collected == ""
