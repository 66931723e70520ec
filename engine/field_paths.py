"""Which `field:` paths a workflow can record, from its versions' declared types, so that a search naming a
path none of them can hold is refused, naming it and the nearest paths that exist, instead of matching
nothing in silence.

A term's field is a durable key: a node's name, or a key derived from one (`pay~charge_id`, `items~3`),
whose value no type declares. Under a node whose type is declared (an input's, an output's, a dispatch's or
a loop's), the path walks the type's JSON schema: object properties, a mapping's values, array items. What
the schema leaves open (no type, `Any`, a union that allows it) is allowed: the check refuses only what no
version can record.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from flowdeck.engine import nodes, values
from flowdeck.engine.flow import Flow
from flowdeck.engine.schema import durable_names, owner_of
from flowdeck.store import field_terms, spi

__all__ = ["check_terms", "known_paths"]

_TYPED = (nodes.Input, nodes.Output, nodes.Dispatch, nodes.Loop, nodes.LoopOn)
_SUGGESTED = 3
_LISTED_DEPTH = 4  # how deep `known_paths` lists a schema's paths (for suggestions only)


def check_terms(workflow_id: str, flows: Sequence[Flow], terms: Iterable[field_terms.SearchTerm]) -> None:
    """`spi.FilterParseError` for the first field term that no version in `flows` can record, naming the
    path and up to three nearest known ones. No versions (a workflow this process does not serve): no
    check."""
    if not flows:
        return
    for term in terms:
        if isinstance(term, field_terms.FieldMatch) and not any(_admits(flow, term) for flow in flows):
            raise spi.FilterParseError(_refusal(workflow_id, flows, term))


def known_paths(flows: Sequence[Flow]) -> list[str]:
    """Every field and declared path the versions can record, dotted (`order`, `order.customer`,
    `order.items.0.sku`), first seen first: what a refusal suggests from."""
    seen: dict[str, None] = {}
    for flow in flows:
        for name, node in durable_names(flow).items():
            seen.setdefault(name)
            if isinstance(node, _TYPED) and node.type is not None:
                schema = values.json_schema(node.type)
                for path in _paths(schema, schema.get("$defs", {}), _LISTED_DEPTH):
                    seen.setdefault(".".join((name, *path)))
    return list(seen)


def _refusal(workflow_id: str, flows: Sequence[Flow], term: field_terms.FieldMatch) -> str:
    asked = ".".join(str(s) for s in (term.field, *term.path))
    known = known_paths(flows)
    nearest = difflib.get_close_matches(asked, known, n=_SUGGESTED, cutoff=0.4) or known[:_SUGGESTED]
    shown = ", ".join(nearest) if nearest else "none: it records no fields"
    return f"workflow {workflow_id!r} records no path {asked} (nearest: {shown})"


def _admits(flow: Flow, term: field_terms.FieldMatch) -> bool:
    names = durable_names(flow)
    owner = owner_of(term.field, names)
    if owner is None:
        return False
    node = names[owner]
    if owner != term.field or not isinstance(node, _TYPED) or node.type is None:
        return True  # a derived key, or a value no type declares: any path may be there
    schema = values.json_schema(node.type)
    return _holds(schema, schema.get("$defs", {}), term.path)


def _resolved(schema: Any, defs: Mapping[str, Any]) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _holds(schema: Any, defs: Mapping[str, Any], path: Sequence[str | int]) -> bool:
    """Can a value of `schema` hold something at `path`?"""
    schema = _resolved(schema, defs)
    if not path or not isinstance(schema, dict):
        return True
    branches = [*schema.get("anyOf", ()), *schema.get("oneOf", ()), *schema.get("allOf", ())]
    if branches:
        return any(_holds(branch, defs, path) for branch in branches)
    head, rest = path[0], path[1:]
    kind = schema.get("type")
    if isinstance(head, int) and (kind == "array" or "items" in schema or "prefixItems" in schema):
        prefix = schema.get("prefixItems", [])
        if head < len(prefix):
            return _holds(prefix[head], defs, rest)
        items = schema.get("items", {} if not prefix else False)
        return items is not False and _holds(items, defs, rest)
    properties = schema.get("properties", {})
    key = str(head)
    if key in properties:
        return _holds(properties[key], defs, rest)
    more = schema.get("additionalProperties")
    if isinstance(more, dict):
        return _holds(more, defs, rest)
    if more is True:
        return True
    # a schema naming no type and no properties is open (Any); one naming either holds nothing else
    return kind is None and not properties and "items" not in schema


def _paths(schema: Any, defs: Mapping[str, Any], depth: int) -> Iterator[tuple[str, ...]]:
    schema = _resolved(schema, defs)
    if depth == 0 or not isinstance(schema, dict):
        return
    for branch in (*schema.get("anyOf", ()), *schema.get("oneOf", ()), *schema.get("allOf", ())):
        yield from _paths(branch, defs, depth)
    for key, sub in schema.get("properties", {}).items():
        yield (key,)
        yield from ((key, *more) for more in _paths(sub, defs, depth - 1))
    items = schema.get("items")
    if isinstance(items, dict):
        yield ("0",)
        yield from (("0", *more) for more in _paths(items, defs, depth - 1))
