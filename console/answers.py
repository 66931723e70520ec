"""What an operator types as a node's answer, read against the node's declared type, and the hint the
answer form and `flowdeck answer` show for it.

How a typed answer is read (the same in the console's form and the CLI):

- a step or a sleep records no value: the text must be empty;
- a node whose value is text (its JSON schema is a string: `str`, `str | None`, a `Literal` of strings, a
  string enum, a date or datetime) takes text that is not JSON **as typed**: `PostNL` is the string
  "PostNL". Text that is JSON is read as JSON, as before, so `"PostNL"` is the same string, escapes work,
  and no answer accepted before changes meaning; text that would read as JSON is quoted to be text
  (`"42"`, `"null"`), else the node refuses the number as not a valid str;
- every other node (a number, a bool, a list, a model, an undeclared value) takes JSON: `42`, `true`,
  `{"approved": true}`;
- empty text is no value (None), which a node that needs one refuses, naming its type.

The engine then judges the value against the declared type (`FlowEngine.answer`), as for a signal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowdeck.console import forms
from flowdeck.engine import errors, nodes, schema, values
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow

__all__ = ["AnswerHint", "hint_for", "hints", "read", "value_of"]

_VALUELESS = (nodes.Step, nodes.Sleep)
_FORMATS = {
    "date-time": "2026-01-31T12:00:00Z",
    "date": "2026-01-31",
    "time": "12:00:00",
    "uuid": "00000000-0000-0000-0000-000000000000",
}
_EXAMPLE_FIELDS = 4  # an object's example names at most this many of its fields


@dataclass(frozen=True)
class AnswerHint:
    """How node `node`'s answer is typed: `tag` its declared type ("str", "int", "Order", "json" when
    undeclared, "none" for a step), `reads` the way text is read ("none", "text" or "json"), and an
    `example` of a value it takes, as it would be typed."""

    node: str
    tag: str
    reads: str
    example: str

    @property
    def words(self) -> str:
        """The hint as one line: "int · JSON, e.g. 42"."""
        if self.reads == "none":
            return f"{self.tag} · leave empty: this node records no value"
        if self.reads == "text":
            return f'{self.tag} · text as typed, e.g. {self.example} (quote text that reads as JSON: "42")'
        return f"{self.tag} · JSON, e.g. {self.example}"


def hints(flow: Flow) -> list[AnswerHint]:
    """The hint of every node an answer may name, in the plan's order."""
    return [_hint(key, node) for key, node in schema.durable_names(flow).items()]


def hint_for(flow: Flow, key: str) -> AnswerHint | None:
    """The hint of the node owning durable key `key` (None when the flow has no such node)."""
    names = schema.durable_names(flow)
    owner = schema.owner_of(key, names)
    if owner is None:
        return None
    node = names[owner]
    if owner != key and not (isinstance(node, nodes.ForEach) and key[len(owner) + 1 :].isdigit()):
        return AnswerHint(key, values.type_tag(None), "json", '{"any": "JSON"}')  # a key inside a subflow
    return _hint(key, node)


def read(text: str, hint: AnswerHint | None) -> Any:
    """The value `text` stands for, read as `hint` says (JSON when there is no hint); raises ValueError
    with a short reason for text that is not one."""
    text = text.strip()
    if not text:
        return None
    if hint is not None and hint.reads == "text" and not _is_json(text):
        forms.check_strings(text)
        return text
    return forms.read_json_text(text)


async def value_of(engine: FlowEngine, execution_id: str, node: str, text: str) -> Any:
    """What `text` stands for as the answer to `node` of execution `execution_id`, read against the
    version the engine would judge it by; ValueError for text that is not one, the engine's errors for an
    execution that is not there or a workflow no process serves."""
    state = await engine.store.get_execution(execution_id)
    if state is None:
        raise errors.FlowExecutionNotFound(execution_id)
    return read(text, hint_for(engine.answer_flow(state), node))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    except RecursionError:  # JSON nested too deep: `read_json_text` refuses it as such
        return True
    return True


def _hint(key: str, node: nodes.Node) -> AnswerHint:
    if isinstance(node, _VALUELESS):
        return AnswerHint(key, "none", "none", "")
    declared = getattr(node, "type", None)
    if declared is None:
        return AnswerHint(key, values.type_tag(None), "json", '{"any": "JSON"}')
    root = values.json_schema(declared)
    resolved = forms.resolve(root, root)
    if resolved.get("type") == "string":
        return AnswerHint(key, values.type_tag(declared), "text", str(_example(resolved, root)))
    return AnswerHint(key, values.type_tag(declared), "json", json.dumps(_example(resolved, root)))


def _example(shape: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Any:
    """A value of JSON schema `shape`, for a person to copy and change."""
    shape = forms.resolve(shape, root)
    if isinstance(shape.get("enum"), list) and shape["enum"]:
        return shape["enum"][0]
    if "const" in shape:
        return shape["const"]
    if "default" in shape:
        return shape["default"]
    kind = shape.get("type")
    if kind == "string":
        return _FORMATS.get(str(shape.get("format")), "some text")
    if kind == "integer":
        return 42
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if depth > 3:  # a recursive model: stop describing it
        return {}
    if kind == "array":
        items = shape.get("items")
        return [_example(items, root, depth + 1)] if isinstance(items, Mapping) else []
    properties = shape.get("properties")
    if isinstance(properties, Mapping):
        named = list(properties.items())[:_EXAMPLE_FIELDS]
        return {name: _example(field, root, depth + 1) for name, field in named}
    arms = shape.get("anyOf") or shape.get("oneOf")
    if isinstance(arms, list) and arms:
        return _example(arms[0], root, depth + 1)
    return {}
