#!/usr/bin/env python
"""Django's command-line utility for Flowdeck."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdeck.console.settings")
    from django.core.management import execute_from_command_line

    from flowdeck.console.deploy import load_settings_or_exit

    load_settings_or_exit()
    argv = list(sys.argv)
    if argv[1:2] == ["demo"]:  # the README's command; the command's own name is flowdeck_demo
        argv[1] = "flowdeck_demo"
    execute_from_command_line(argv)


if __name__ == "__main__":
    main()
