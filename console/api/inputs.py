"""Input values arrive as JSON, so they are judged as JSON: strictly, against the input's declared type.

The engine validates in pydantic's lax Python mode (right for Python callers handing it objects); on the
wire that would let `0` pass for a boolean and `"7"` for an integer, values the published JSON schema
refuses. Here each value goes through pydantic's strict JSON mode first (ISO strings still become
datetimes, as the schema's formats say), and a refusal is the engine's own `FlowInputError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from flowdeck.console import discovery
from flowdeck.engine import errors, values
from flowdeck.engine.engine import declared_inputs
from flowdeck.engine.flow import Flow

__all__ = ["check_input", "check_inputs"]


def check_input(workflow_id: str, name: str, value: Any, flow: Flow | None = None) -> None:
    """Refuse `value` for input `name` of the served `workflow_id` unless it is valid JSON for its type in
    `flow`, the version the value is for (default: the newest, what a start uses; a signal passes its
    execution's version). Unknown workflows and undeclared names are left to the engine, which names them."""
    if flow is None:
        flow = discovery.registered_flows().get(workflow_id)
    node = declared_inputs(flow).get(name) if flow is not None else None
    declared = getattr(node, "type", None)
    if declared is None:
        return
    try:
        values.adapter(declared).validate_json(json.dumps(_integral_floats(value)), strict=True)
    except ValidationError as error:
        raise errors.FlowInputError(
            f"value for {name!r} is not a valid {values.type_tag(declared)}: {error}", name=name
        ) from error


def _integral_floats(value: Any) -> Any:
    """`2.0` as `2`: JSON Schema's `integer` holds integral numbers however they are written (strict mode
    would refuse them for an `int`; a `float` still takes the integer)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_floats(item) for item in value]
    return value


def check_inputs(workflow_id: str, inputs: Mapping[str, Any] | None) -> None:
    for name, value in (inputs or {}).items():
        check_input(workflow_id, name, value)
