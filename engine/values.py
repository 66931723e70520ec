"""Values: how a node's value becomes a recorded field and comes back, and the record bodies read.

A node's value is what the store gives back. Downstream nodes always see the value after its round trip
through this serializer, on a first run exactly as on a replay, so the two can never see different types.
Declared types go through pydantic; an undeclared value must be JSON-native and is stored as such.
"""

from __future__ import annotations

import difflib
import json
import math
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from flowdeck.engine.errors import FlowValueError
from flowdeck.store.spi import FieldData

__all__ = [
    "UNDECLARED",
    "Record",
    "adapter",
    "decode",
    "encode",
    "is_json_native",
    "json_schema",
    "round_trip",
    "type_tag",
]

UNDECLARED = "json"
"""The tag of a value recorded without a declared type."""

_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def adapter(declared: Any) -> TypeAdapter[Any]:
    """The pydantic adapter for a declared type, built once per type (building one is the slow part)."""
    try:
        return _ADAPTERS[declared]
    except KeyError:
        made = _ADAPTERS[declared] = TypeAdapter(declared)
        return made
    except TypeError:  # an unhashable type expression (Annotated with unhashable metadata)
        return TypeAdapter(declared)


# ------------------------------------------------------------------------------------------ tags


def type_tag(declared: Any) -> str:
    """A stable, readable name for a declared type: "int", "Order", "list[Order]", "int | None".

    "json" for an undeclared value. It is what FieldData.tag records and what the structural hash reads,
    so it must not depend on memory addresses or module reloads.
    """
    if declared is None:
        return UNDECLARED
    if declared is type(None):
        return "None"
    if declared is Any:
        return "Any"
    if declared is Ellipsis:
        return "..."
    origin, args = typing.get_origin(declared), typing.get_args(declared)
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(type_tag(a) for a in args)
    if origin is typing.Annotated:
        return type_tag(args[0])
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is not None:
        base = getattr(origin, "__name__", None) or repr(origin).replace("typing.", "")
        return f"{base}[{', '.join(type_tag(a) for a in args)}]" if args else base
    if isinstance(declared, type):
        return declared.__name__
    return repr(declared).replace("typing.", "")


# --------------------------------------------------------------------------------- serialization


def is_json_native(value: Any) -> bool:
    """None, bool, int, finite float, str, and lists / str-keyed dicts of those, recursively."""
    return _not_native(value) is None


def _not_native(value: Any, where: str = "value") -> str | None:
    """Why `value` is not JSON-native (naming where inside it), or None when it is."""
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value!r}, which JSON cannot hold"
    if isinstance(value, list):
        for i, item in enumerate(value):
            reason = _not_native(item, f"{where}[{i}]")
            if reason:
                return reason
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has a non-str key {key!r}"
            reason = _not_native(item, f"{where}[{key!r}]")
            if reason:
                return reason
        return None
    return f"{where} is of type {type(value).__name__}, which is not JSON-native"


def encode(node: str, value: Any, declared: Any = None) -> FieldData:
    """The recorded form of node `node`'s value: JSON text beside the declared type's tag.

    Raises FlowValueError, naming the node and suggesting `type=`, when the value cannot be recorded.
    """
    if declared is None:
        reason = _not_native(value)
        if reason:
            raise FlowValueError(node, reason)
        return FieldData(json.dumps(value, separators=(",", ":"), ensure_ascii=False), UNDECLARED)
    type_adapter = adapter(declared)
    tag = type_tag(declared)
    try:
        # Validate first: dumping a value of the wrong type only warns, and would record a lie.
        checked = type_adapter.validate_python(value)
        text = type_adapter.dump_json(checked).decode()
    except (ValidationError, ValueError, TypeError) as error:
        raise FlowValueError(node, f"it is not a valid {tag}: {_brief(error)}") from error
    return FieldData(text, tag)


def decode(field: FieldData, declared: Any = None) -> Any:
    """The value a recorded field stands for, as downstream nodes see it."""
    if declared is None:
        return json.loads(field.value)
    return adapter(declared).validate_json(field.value)


def round_trip(node: str, value: Any, declared: Any = None) -> Any:
    """What the store will give back for this value: downstream nodes always see this, never `value`."""
    return decode(encode(node, value, declared), declared)


def json_schema(declared: Any) -> dict[str, Any]:
    """The JSON schema of a declared type (an input's, for the API and the console's signal form)."""
    if declared is None:
        return {}
    return adapter(declared).json_schema()


def _brief(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "value"
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        return f"{where}: {first.get('msg', '')}{more}"
    return str(error)


# ------------------------------------------------------------------------------------------ record


class Record:
    """The values of earlier nodes, read by attribute: `ctx.order`, `ctx.payment.charge_id`.

    A subflow's record is itself a Record. Field names never collide with methods: the few helpers are
    underscored, as namedtuple's are (`_asdict`, `_fields`, `_merge`, `_with`). Immutable.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        merged = dict(values or {})
        merged.update(fields)
        object.__setattr__(self, "_values", merged)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(self._missing(name)) from None

    def _missing(self, name: str) -> str:
        available = ", ".join(self._values) or "none"
        close = difflib.get_close_matches(name, list(self._values), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"no field {name!r} in this record (available: {available}){hint}"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a record is read-only; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a record is read-only; cannot delete {name!r}")

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(self._missing(name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self._values == other._values
        if isinstance(other, Mapping):
            return self._values == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Record(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self._values]

    def __getstate__(self) -> dict[str, Any]:
        return self._values

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(state))

    @property
    def _fields(self) -> tuple[str, ...]:
        return tuple(self._values)

    def _get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def _with(self, **fields: Any) -> Record:
        """A copy with these fields added or replaced."""
        return Record(self._values, **fields)

    def _merge(self, other: Mapping[str, Any] | Record) -> Record:
        """A copy with every field of `other` added (other's values win)."""
        return Record(self._values, **dict(other._values if isinstance(other, Record) else other))

    def _asdict(self) -> dict[str, Any]:
        """Plain dicts all the way down (nested records included)."""
        return {k: v._asdict() if isinstance(v, Record) else v for k, v in self._values.items()}
