"""Forms generated from an input's JSON schema, and the reading of what a person typed into them.

A signal form has one field per property of an object schema (a scalar input is one field named
`value`); nested objects and arrays are typed as JSON. What arrives is turned back into a value and then
validated on the server by the input's own pydantic type, whose errors are placed next to the field they
name (`loc`), so the browser never decides what is valid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from flowdeck.console import refusals
from flowdeck.engine import values

__all__ = ["FormField", "SignalForm", "check_strings", "read_json_text", "resolve", "signal_form"]

SCALAR = "value"  # the one field of a scalar input


@dataclass(frozen=True)
class FormField:
    """One field: `kind` is text, integer, number, boolean, choice or json."""

    name: str
    kind: str
    required: bool
    description: str = ""
    choices: tuple[str, ...] = ()
    default: str = ""


@dataclass(frozen=True)
class SignalForm:
    """The fields of one input, the values last typed (strings) and the errors by field ('' = the form)."""

    input_name: str
    fields: tuple[FormField, ...]
    scalar: bool
    typed: Mapping[str, str]
    errors: Mapping[str, tuple[str, ...]]

    @property
    def form_errors(self) -> tuple[str, ...]:
        """The errors of the whole form (not of one field). Templates read this, never `errors.<key>`: a
        field may be named `items` or `keys`, which a template lookup would take for the dict's method."""
        return tuple(self.errors.get("", ()))


def resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return resolve(target, root) if isinstance(target, Mapping) else {}
    any_of = schema.get("anyOf")
    if isinstance(any_of, list):  # Optional[X]: the non-null arm
        arms = [a for a in any_of if isinstance(a, Mapping) and a.get("type") != "null"]
        if len(arms) == 1:
            merged = {**resolve(arms[0], root), **{k: v for k, v in schema.items() if k != "anyOf"}}
            return merged
    return schema


def _field(name: str, schema: Mapping[str, Any], root: Mapping[str, Any], required: bool) -> FormField:
    resolved = resolve(schema, root)
    kind = {"string": "text", "integer": "integer", "number": "number", "boolean": "boolean"}.get(
        str(resolved.get("type", "")), "json"
    )
    choices: tuple[str, ...] = ()
    if isinstance(resolved.get("enum"), list):
        kind, choices = "choice", tuple(str(c) for c in resolved["enum"])
    default = resolved.get("default")
    shown = "" if default is None else (json.dumps(default) if kind == "json" else str(default))
    description = str(resolved.get("description") or resolved.get("title") or "")
    return FormField(name, kind, required and "default" not in resolved, description, choices, shown)


def fields_of(schema: Mapping[str, Any]) -> tuple[tuple[FormField, ...], bool]:
    """The form fields for a JSON schema, and whether the input is a scalar (one `value` field)."""
    resolved = resolve(schema, schema)
    properties = resolved.get("properties")
    if resolved.get("type") == "object" and isinstance(properties, Mapping) and properties:
        required = set(resolved.get("required", ()))
        return tuple(_field(n, s, schema, n in required) for n, s in properties.items()), False
    return (_field(SCALAR, resolved, schema, True),), True


def signal_form(
    input_name: str,
    schema: Mapping[str, Any],
    typed: Mapping[str, str] | None = None,
    errors: Mapping[str, tuple[str, ...]] | None = None,
) -> SignalForm:
    fields, scalar = fields_of(schema)
    return SignalForm(input_name, fields, scalar, dict(typed or {}), dict(errors or {}))


def read_json_text(text: str) -> Any:
    """A JSON value typed by a person; raises ValueError with a short reason, also for a string in it
    that no store can hold (`\\u0000`, a lone `\\udfff`)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})") from error
    except RecursionError:
        raise ValueError("not JSON: nested too deeply") from None
    check_strings(value)
    return value


def check_strings(value: Any) -> None:
    """Refuse (ValueError) a string anywhere in `value` that no store can hold."""
    pending = [value]  # a loop, not recursion: the value may be nested as deep as the parser allows
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            problem = refusals.text_problem(item)
            if problem is not None:
                raise ValueError(f"a string {problem}")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _coerce(field: FormField, raw: str | None) -> Any:
    """The typed text as the JSON value the field stands for; raises ValueError for text that is not one."""
    if field.kind == "boolean":
        return raw in ("on", "true", "1")
    text = (raw or "").strip()
    if text == "":
        if field.required:
            raise ValueError("this field is required")
        return None
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("enter a whole number") from None
    if field.kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError("enter a number") from None
    if field.kind == "json":
        return read_json_text(text)
    return raw or ""


def read_signal(
    form: SignalForm, posted: Mapping[str, str], declared: Any
) -> tuple[Any, dict[str, tuple[str, ...]]]:
    """The value the posted form stands for, validated by the input's type; errors by field name."""
    errors: dict[str, tuple[str, ...]] = {}
    value: dict[str, Any] = {}
    for field in form.fields:
        try:
            coerced = _coerce(field, posted.get(field.name))
        except ValueError as error:
            errors[field.name] = (str(error),)
            continue
        if coerced is not None:
            value[field.name] = coerced
    if errors:
        return None, errors
    result: Any = value.get(SCALAR) if form.scalar else value
    if declared is None:
        return result, {}
    try:
        values.adapter(declared).validate_python(result)
    except ValidationError as error:
        return None, _by_field(error, form)
    return result, {}


def _by_field(error: ValidationError, form: SignalForm) -> dict[str, tuple[str, ...]]:
    names = {f.name for f in form.fields}
    found: dict[str, list[str]] = {}
    for item in error.errors():
        loc = [str(part) for part in item.get("loc", ())]
        head = SCALAR if form.scalar else (loc[0] if loc else "")
        where = head if head in names else ""
        rest = loc[1:] if not form.scalar and loc else loc
        prefix = f"{'.'.join(rest)}: " if rest else ""
        found.setdefault(where, []).append(prefix + str(item.get("msg", "invalid")))
    return {k: tuple(v) for k, v in found.items()}
