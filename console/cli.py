"""The `flowdeck` console script: `manage.py` with the project's settings, and the operator verbs at the top.

`flowdeck ls --status stopped` is `python manage.py flow ls --status stopped`; any other first word is a
management command (`flowdeck runworkers`, `flowdeck demo`, `flowdeck migrate`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["argv_for", "main"]

# The verbs of `manage.py flow`, in the order its help lists them (the command takes them from here, so
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
    "token",
)


def argv_for(args: Sequence[str]) -> list[str]:
    """The management command line that `flowdeck ARGS` runs (`flowdeck --as USER VERB …` too)."""
    verb_at = 2 if args and args[0] == "--as" else 0
    if len(args) > verb_at and args[verb_at] in FLOW_VERBS:
        return ["flowdeck", "flow", *args]
    return ["flowdeck", *args]


def main(argv: Sequence[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.core.management import execute_from_command_line

    from console.deploy import load_settings_or_exit

    load_settings_or_exit()
    execute_from_command_line(argv_for(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
