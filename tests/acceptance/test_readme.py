"""The README stays true: its stop-code table says what STOP_CODES says, and it names every command."""

from __future__ import annotations

from pathlib import Path

from flowdeck.console.cli import FLOW_VERBS
from flowdeck.engine.errors import STOP_CODES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()

DEMO_COMMAND = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/python manage.py demo"
TEST_COMMAND = "bash .ci/run"
CI_SCRIPT = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()


def test_every_stop_code_is_documented_with_its_advice() -> None:
    for code, text in STOP_CODES.items():
        assert f"| `{code}` | {text} |" in README, (
            f"README's stop-code table lacks {code} as STOP_CODES says it"
        )


def test_the_two_commands_a_newcomer_types() -> None:
    assert f"```sh\n{DEMO_COMMAND}\n```" in README
    assert f"```sh\n{TEST_COMMAND}\n```" in README
    # .ci/run ends with the suite, run as the README says to re-run it once installed
    assert "```sh\n.venv/bin/python -m pytest\n```" in README
    assert CI_SCRIPT.rstrip().splitlines()[-1].startswith("bash .ci/readme-demo.sh")
    assert ".venv/bin/python -m pytest\n" in CI_SCRIPT


def test_every_cli_verb_and_command_is_documented() -> None:
    for verb in FLOW_VERBS:
        assert f"`flowdeck {verb}" in README, verb
    for command in ("`flowdeck_workers ", "`demo "):
        assert command in README
