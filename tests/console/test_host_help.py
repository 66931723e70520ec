"""What a host project's `manage.py help` lists of Flowdeck's (issue 28: `runworkers` sat beside channels'
`runworker`): every Flowdeck command is named `flowdeck…`, so its name says whose it is wherever Django
lists it, and none is named like another app's. The host serves the console's websocket, so channels and
daphne are installed, as the docs have it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = """
from tests.console.host.settings import *  # noqa

INSTALLED_APPS = ["daphne", *INSTALLED_APPS, "channels"]
"""


def _sections(help_text: str) -> dict[str, list[str]]:
    """`manage.py help`'s listing: section (an app's last dotted name) -> its commands."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in help_text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif line.startswith("    ") and current is not None:
            current.append(line.strip())
    return sections


def test_a_host_s_help_lists_every_flowdeck_command_under_a_flowdeck_name(tmp_path: Path) -> None:
    (tmp_path / "help_settings.py").write_text(SETTINGS)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "help_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        "HOST_DATABASE": str(tmp_path / "db.sqlite3"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "django", "help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sections = _sections(done.stdout)
    [ours] = [name for name, commands in sections.items() if "flowdeck_workers" in commands]
    assert sections[ours] == ["flowdeck", "flowdeck_demo", "flowdeck_upgrade", "flowdeck_workers"]
    assert sections["channels"] == ["runworker"]
    others = {command for name, commands in sections.items() if name != ours for command in commands}
    assert not any(command.startswith("flowdeck") for command in others)
    assert "demo" not in others | set(sections[ours])  # a generic name a host's own command may want
