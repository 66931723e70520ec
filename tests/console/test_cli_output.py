"""The CLI's output helper (`console/management/commands/_output.py`): escapes and one line per error."""

from __future__ import annotations

import io
import logging

import pydantic
import pytest

from flowdeck.console.management.commands import _output
from flowdeck.engine import errors

EVERY_CONTROL = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]))


def test_escape_puts_every_control_character_on_the_line_as_its_python_escape() -> None:
    assert _output.escape("a\x1b[31mb\x07\rc\x7f\x9b\u2028\n\té ü 東") == (
        "a\\x1b[31mb\\x07\\rc\\x7f\\x9b\\u2028\\n\\té ü 東"
    )
    escaped = _output.escape(EVERY_CONTROL)
    assert escaped.isprintable()
    assert escaped == "".join(
        {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(
            c, f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
        )
        for c in EVERY_CONTROL
    )
    assert _output.escape(escaped) == escaped  # nothing left to escape


def test_escape_lines_keeps_the_newlines_only() -> None:
    assert _output.escape_lines("one\x1b]0;t\x07\ntwo\r\n") == "one\\x1b]0;t\\x07\ntwo\\r\n"


def test_safe_output_escapes_what_is_written_and_ends_the_line() -> None:
    out = io.StringIO()
    _output.SafeOutput(out).write("a\x1bb\nc")
    assert out.getvalue() == "a\\x1bb\nc\n"


def test_escaping_formatter_keeps_a_tracebacks_lines() -> None:
    record = logging.LogRecord("engine", logging.ERROR, __file__, 1, "claimed %s", ("e\x1b[2J",), None)
    assert _output.EscapingFormatter("%(message)s").format(record) == "claimed e\\x1b[2J"


class Item(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    sku: str
    qty: int


class Order(pydantic.BaseModel):
    items: list[Item]


def test_validation_lines_name_the_path_under_the_input() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        Order.model_validate({"items": [{"sku": "w", "qty": "many"}, {"qty": 1, "sku\x1b": 2}]})
    assert _output.validation_lines(caught.value, "order") == [
        "order.items.0.qty: Input should be a valid integer, unable to parse string as an integer",
        "order.items.1.sku: Field required",
        "order.items.1.sku\\x1b: Extra inputs are not permitted",
    ]
    assert _output.validation_lines(caught.value)[0] == (
        "items.0.qty: Input should be a valid integer, unable to parse string as an integer"
    )


def test_input_error_text_keeps_the_engines_head_and_drops_pydantics_report() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        pydantic.TypeAdapter(int).validate_python("x")
    error = errors.FlowInputError(f"value for 'n' is not a valid int: {caught.value}", name="n")
    error.__cause__ = caught.value  # as the engine raises it: `from` the pydantic error
    assert _output.input_error_text(error).splitlines() == [
        "value for 'n' is not a valid int:",
        "  n: Input should be a valid integer, unable to parse string as an integer",
    ]
    plain = errors.FlowInputError("input 'x' is not declared by this flow", name="x")
    assert _output.input_error_text(plain) == "input 'x' is not declared by this flow"
