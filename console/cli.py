"""The `flowdeck` console script: `manage.py` with the project's settings, and the operator verbs at the top.

Run in a project's folder it is that project's `manage.py`: the folder is importable (as `manage.py`'s own
folder is) and the settings are `DJANGO_SETTINGS_MODULE`, else the module the folder's `manage.py` sets
as its default, else Flowdeck's own project's (`flowdeck.console.settings`).

`flowdeck ls --status stopped` is `python manage.py flowdeck ls --status stopped` and `flowdeck workers` is
`python manage.py flowdeck_workers`; any other first word is a management command (`flowdeck demo`,
`flowdeck migrate`).
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["argv_for", "main", "settings_module_of"]

OWN_SETTINGS = "flowdeck.console.settings"

# The verbs of `manage.py flowdeck`, in the order its help lists them (the command takes them from here, so
# this module stays importable before Django is set up).
FLOW_VERBS = (
    "ls",
    "show",
    "start",
    "signal",
    "cancel",
    "cancel-all",
    "resume",
    "answer",
    "end",
    "diagram",
    "parked",
    "purge",
    "activity",
    "limits",
    "schedule",
    "rate-limits",
    "token",
)

# The script's own words for the commands whose names carry the app's prefix in `manage.py help`.
COMMANDS = {"workers": "flowdeck_workers", "demo": "flowdeck_demo"}


def argv_for(args: Sequence[str]) -> list[str]:
    """The management command line that `flowdeck ARGS` runs (`flowdeck --as USER VERB …` too)."""
    verb_at = 2 if args and args[0] == "--as" else 0
    if len(args) > verb_at and args[verb_at] in FLOW_VERBS:
        return ["flowdeck", "flowdeck", *args]
    if args and args[0] in COMMANDS:
        return ["flowdeck", COMMANDS[args[0]], *args[1:]]
    return ["flowdeck", *args]


def settings_module_of(manage_py: Path) -> str | None:
    """The settings module a `manage.py` sets by default (its `os.environ.setdefault(
    "DJANGO_SETTINGS_MODULE", "…")`, as `startproject` writes it), read without running it; None when it
    has none or there is no such file."""
    try:
        tree = ast.parse(manage_py.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        named = node.func.attr == "setdefault" and len(node.args) == len(texts) == 2
        if named and texts[0] == "DJANGO_SETTINGS_MODULE":
            return str(texts[1])
    return None


def main(argv: Sequence[str] | None = None) -> None:
    # The project folder is importable, as it is for `manage.py` (its own folder): a project's settings and
    # apps, and Flowdeck's own examples, which are not part of the installed package.
    folder = os.getcwd()
    if folder not in sys.path:
        sys.path.insert(0, folder)
    if not os.environ.get("DJANGO_SETTINGS_MODULE"):
        # in a host project's folder, the project's settings, not Flowdeck's own (another database)
        project = settings_module_of(Path(folder) / "manage.py")
        os.environ["DJANGO_SETTINGS_MODULE"] = project or OWN_SETTINGS
    from django.core.management import execute_from_command_line

    from flowdeck.console.deploy import load_settings_or_exit

    load_settings_or_exit()
    execute_from_command_line(argv_for(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
