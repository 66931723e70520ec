"""Each served workflow's inputs, with their real JSON schemas, in the OpenAPI document.

The start route is generic (`/workflows/{workflowId}/executions`, inputs an open object); the document
also lists, per workflow discovered in this process, the concrete path `/workflows/<id>/executions` whose
`inputs` object names each declared input with its schema (pydantic's, `$defs` moved into components).
Django serves both with the same view, so a client generated from the document gets typed starts.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from flowdeck.console import discovery
from flowdeck.engine import values
from flowdeck.engine.engine import declared_inputs
from flowdeck.engine.flow import Flow

__all__ = ["add_workflow_inputs", "input_schemas"]

_GENERIC_START = "/api/v1/workflows/{workflow_id}/executions"


def _component_name(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9_.-]", "_", p) for p in parts)


def _relocate(schema: Any, defs_prefix: str) -> Any:
    """Rewrite pydantic's local `#/$defs/X` references to `#/components/schemas/<prefix>X`."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                out[key] = "#/components/schemas/" + defs_prefix + value.removeprefix("#/$defs/")
            else:
                out[key] = _relocate(value, defs_prefix)
        return out
    if isinstance(schema, list):
        return [_relocate(item, defs_prefix) for item in schema]
    return schema


def _titled(schema: Any, title: str) -> Any:
    """`schema` with a title unique in the document when it has one: client generators name a class by
    its schema's title, and two workflows' `Item` models must not become one class (or a clash)."""
    if isinstance(schema, dict) and "title" in schema:
        return {**schema, "title": title}
    return schema


def input_schemas(workflow_id: str, flow: Flow) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `inputs` object schema of a workflow's start body, and the components its types need."""
    components: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for name, node in declared_inputs(flow).items():
        prefix = _component_name(workflow_id, name) + "_"
        schema = copy.deepcopy(values.json_schema(node.type))
        for def_name, definition in schema.pop("$defs", {}).items():
            components[prefix + def_name] = _titled(_relocate(definition, prefix), prefix + def_name)
        properties[name] = _titled(_relocate(schema, prefix), _component_name(workflow_id, name))
    inputs = {
        "type": "object",
        "title": f"Inputs of {workflow_id}",
        "properties": properties,
        "additionalProperties": False,
    }
    return inputs, components


def add_workflow_inputs(document: dict[str, Any], flows: Mapping[str, Flow] | None = None) -> dict[str, Any]:
    """Add a typed start path per workflow to an OpenAPI document built by ninja (changed in place)."""
    paths = document.setdefault("paths", {})
    generic = paths.get(_GENERIC_START, {}).get("post")
    if generic is None:
        return document
    components = document.setdefault("components", {}).setdefault("schemas", {})
    execution_id = components.get("StartRequest", {}).get("properties", {}).get("executionId", {})
    if "StartRequest" in components:
        # The generic start cannot say which inputs a workflow declares: inputs go through its own start.
        components["StartRequest"]["properties"]["inputs"] = {
            "anyOf": [{"type": "object", "additionalProperties": False}, {"type": "null"}],
            "description": "Inputs are seeded through the workflow's own start operation "
            "(`start_<workflow id>`), whose body names each input with its schema",
        }
    for workflow_id, flow in sorted((flows if flows is not None else discovery.registered_flows()).items()):
        inputs, needed = input_schemas(workflow_id, flow)
        components.update(needed)
        body_name = _component_name("StartRequest", workflow_id)
        components[body_name] = {
            "type": "object",
            "title": f"Start {workflow_id}",
            "properties": {
                "executionId": execution_id,
                "inputs": {"anyOf": [inputs, {"type": "null"}]},
            },
            "additionalProperties": False,
        }
        operation = copy.deepcopy(generic)
        operation["operationId"] = _component_name("start", workflow_id)
        operation["summary"] = f"Start {workflow_id}"
        operation["parameters"] = [p for p in operation.get("parameters", []) if p.get("in") != "path"]
        operation["requestBody"] = {
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body_name}"}}},
            "required": False,
        }
        paths[f"/api/v1/workflows/{quote(workflow_id, safe='')}/executions"] = {"post": operation}
    return document


# ------------------------------------------------------------------ what every request's text may hold


def _text_rules(schema: Any, no_nul: str) -> Any:
    """`schema` saying what `console.api.guard` enforces: no NUL in any declared string (a `pattern`) or
    in any key of an open object (`propertyNames`).

    Free-form values (`{}`: a signal's body, an `Any` field, an open object's values) stay free-form: the
    schema of "any JSON without a NUL" is recursive, which client generators (openapi-python-client) do
    not parse. The guard refuses a NUL in them all the same (400 `nul_character`).
    """
    if not isinstance(schema, dict) or "$ref" in schema:
        return schema
    out = dict(schema)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if key in out:
            out[key] = [_text_rules(s, no_nul) for s in out[key]]
    if "properties" in out:
        out["properties"] = {name: _text_rules(s, no_nul) for name, s in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _text_rules(out["items"], no_nul)
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _text_rules(out["additionalProperties"], no_nul)
    if out.get("type") == "string" and not {"pattern", "enum", "const", "format"} & set(out):
        out["pattern"] = no_nul
    if out.get("type") == "object" and out.get("additionalProperties") is not False:
        out.setdefault("propertyNames", {"pattern": no_nul})
    return out


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"].rsplit("/", 1)[-1]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value))
    return set()


def declare_text_rules(document: dict[str, Any], no_nul: str) -> dict[str, Any]:
    """Apply `_text_rules` to every request body and parameter, and to every component they reach
    (changed in place); responses are left as they are."""
    components = document.setdefault("components", {}).setdefault("schemas", {})
    requests: list[dict[str, Any]] = []
    for item in document.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _text_rules(parameter.get("schema", {}), no_nul)
                requests.append(parameter["schema"])
            for media in operation.get("requestBody", {}).get("content", {}).values():
                media["schema"] = _text_rules(media.get("schema", {}), no_nul)
                requests.append(media["schema"])
    seen: set[str] = set()
    todo = _refs(requests)
    while todo:
        name = todo.pop()
        seen.add(name)
        if name in components:
            components[name] = _text_rules(components[name], no_nul)
            todo |= _refs(components[name]) - seen
    return document
