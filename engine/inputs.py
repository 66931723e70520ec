"""What a caller hands a flow, checked before anything is written: the declared inputs, a value judged
against its input's type, and the refusal naming the inputs a flow declares. A start, a signal and an
operator's answer all judge values here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from flowdeck.engine import errors, interpreter, nodes, values
from flowdeck.engine.flow import Flow
from flowdeck.store import spi

__all__ = ["check_value", "declared_inputs", "undeclared"]


def declared_inputs(flow: Flow) -> dict[str, nodes.Input]:
    """The inputs a caller may hand in (seeded at start or signalled), by name, in declaration order:
    the same set a subflow's mapper supplies when the flow runs as a child."""
    return {node.name: node for node in interpreter.child_inputs(flow)}


def check_value(name: str, declared: Any, value: Any) -> spi.FieldData:
    """Validate `value` against the input's type (pydantic's message on failure) and encode it."""
    if declared is not None:
        try:
            value = values.adapter(declared).validate_python(value)
        except ValidationError as error:
            raise errors.FlowInputError(
                f"value for {name!r} is not a valid {values.type_tag(declared)}: {error}", name=name
            ) from error
    try:
        return values.encode(name, value, declared)
    except errors.FlowValueError as error:
        raise errors.FlowInputError(str(error), name=name) from error


def undeclared(name: str, declared: Iterable[str]) -> errors.FlowInputError:
    names = list(declared)
    return errors.FlowInputError(
        f"input {name!r} is not declared by this flow (declared inputs: {', '.join(names) or 'none'})",
        name=name,
        declared=names,
    )
