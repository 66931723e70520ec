"""The README stays true: its stop-code table says what STOP_CODES says, and it names every command."""

from __future__ import annotations

from pathlib import Path

from console.cli import FLOW_VERBS
from engine.errors import STOP_CODES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()

DEMO_COMMAND = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/python manage.py demo"
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/python -m pytest"


def test_every_stop_code_is_documented_with_its_advice() -> None:
    for code, text in STOP_CODES.items():
        assert f"| `{code}` | {text} |" in README, (
            f"README's stop-code table lacks {code} as STOP_CODES says it"
        )


def test_the_two_commands_a_newcomer_types() -> None:
    assert f"```sh\n{DEMO_COMMAND}\n```" in README
    assert f"```sh\n{TEST_COMMAND}\n```" in README


def test_every_cli_verb_and_command_is_documented() -> None:
    for verb in FLOW_VERBS:
        assert f"`flow {verb}" in README, verb
    for command in ("`runworkers ", "`demo "):
        assert command in README
