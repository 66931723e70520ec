"""Finding flows: each installed app's `flows.py`, and the modules named by FLOWDECK_FLOW_MODULES.

A flows module declares its workflows in `FLOWS`: a mapping of workflow id to `Flow`, or an iterable of
`Flow` (each registered under its own name). Modules without `FLOWS` contribute nothing, so a module may
hold helper flows (a subflow's child) without serving them as workflows of their own.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping

from django.utils.module_loading import autodiscover_modules

from console.conf import flowdeck_settings
from engine.flow import Flow

__all__ = ["FlowDiscoveryError", "discover", "flows_of", "registered_flows"]

_flows: dict[str, Flow] = {}


class FlowDiscoveryError(Exception):
    """A flows module declared something that is not a flow, or two modules claimed one workflow id."""


def flows_of(module_name: str) -> dict[str, Flow]:
    """The workflows a module declares in FLOWS (empty when it declares none)."""
    module = importlib.import_module(module_name)
    declared = getattr(module, "FLOWS", None)
    if declared is None:
        return {}
    items: Iterable[tuple[str, object]]
    if isinstance(declared, Mapping):
        items = declared.items()
    else:
        items = ((getattr(f, "name", ""), f) for f in declared)
    found: dict[str, Flow] = {}
    for workflow_id, flow in items:
        if not isinstance(flow, Flow):
            raise FlowDiscoveryError(f"{module_name}.FLOWS[{workflow_id!r}] is not a Flow: {flow!r}")
        found[str(workflow_id)] = flow
    return found


def _add(source: str, flows: Mapping[str, Flow]) -> None:
    for workflow_id, flow in flows.items():
        existing = _flows.get(workflow_id)
        if existing is not None and existing is not flow:
            raise FlowDiscoveryError(f"workflow id {workflow_id!r} is declared twice (again in {source})")
        _flows[workflow_id] = flow


def discover(extra_modules: Iterable[str] = ()) -> dict[str, Flow]:
    """Import every app's flows module and the configured ones; answer every workflow found so far."""
    for module in autodiscover_modules_named("flows"):
        _add(module, flows_of(module))
    for module in (*flowdeck_settings().flow_modules, *extra_modules):
        _add(module, flows_of(module))
    return dict(_flows)


def autodiscover_modules_named(name: str) -> list[str]:
    """Import `<app>.<name>` for every installed app that has one; answer the module names imported."""
    from django.apps import apps

    autodiscover_modules(name)
    found = []
    for config in apps.get_app_configs():
        module_name = f"{config.name}.{name}"
        try:
            importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        found.append(module_name)
    return found


def registered_flows() -> dict[str, Flow]:
    """Every workflow discovered in this process, by id."""
    return dict(_flows)
