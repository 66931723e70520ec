"""Finding flows: each installed app's `flows.py`, and the modules named by FLOWDECK_FLOW_MODULES.

A flows module declares its workflows in `FLOWS`, in one of two shapes:

- a mapping of workflow id to a `Flow`, or to a list of `Flow` versions, oldest first: the last is the
  newest, what new starts use; the earlier ones stay served so that executions started under them run to
  their end (`FLOWS = {"fulfilment": [fulfilment_v1, fulfilment]}` during a migration);
- an iterable of `Flow`, each served under its own `Flow.init` name; flows sharing a name are versions of
  that workflow, oldest first.

Every workflow id keeps the id rule (`engine.ids`); a declaration that is not a flow, an empty list of
versions, or two versions of one id with the same structure is refused here, naming the module and the id.
A flows module may also declare `RATE_LIMITS`: a mapping of name to `flowdeck.RateLimit`
(engine/rate_limits.py), the limits its nodes' `rate_limit=` name; two modules declaring one name
differently are refused.
A flows module may also declare `SCHEDULES`: an iterable of schedules (`flowdeck.scheduled(...)`, values
of `store.schedules.ScheduleSpec`), each checked here (name, cron or interval, zone: anything else is
refused naming the module and the position); two modules declaring one schedule name are refused too.
Their workflows and inputs are judged when a process registers them (`runtime.serve`).

Modules without `FLOWS` contribute nothing, so a module may hold helper flows (a subflow's child) without
serving them as workflows of their own. `served()` is the set every process registers (web, workers, CLI,
demo), in the order they register it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Mapping, Sequence

from django.utils.module_loading import autodiscover_modules

from flowdeck.console import task_flows
from flowdeck.console.conf import flowdeck_settings
from flowdeck.engine import errors, ids, rate_limits, schedule_ticks, schema
from flowdeck.engine.flow import Flow
from flowdeck.store import schedules

__all__ = [
    "FlowDiscoveryError",
    "declared_rate_limits",
    "declared_schedules",
    "discover",
    "flow_versions",
    "flows_of",
    "registered_flows",
    "schedules_of",
    "served",
]

_flows: dict[str, tuple[Flow, ...]] = {}
_schedules: dict[str, tuple[str, schedules.ScheduleSpec]] = {}  # by name: the module, the definition
_rate_limits: dict[str, tuple[str, rate_limits.RateLimit]] = {}  # by name: the module, the definition


class FlowDiscoveryError(Exception):
    """A flows module declared something that is not a flow (or a list of its versions), a workflow id
    breaking the id rule, or two modules claimed one workflow id."""


def flows_of(module_name: str) -> dict[str, tuple[Flow, ...]]:
    """The workflows a module declares in FLOWS, each with its versions oldest first (empty when it
    declares none)."""
    module = importlib.import_module(module_name)
    declared = getattr(module, "FLOWS", None)
    if declared is None:
        return {}
    where = f"{module_name}.FLOWS"
    if isinstance(declared, Mapping):
        return {workflow_id: _versions(where, workflow_id, entry) for workflow_id, entry in declared.items()}
    if isinstance(declared, str | bytes) or not isinstance(declared, Iterable):
        raise FlowDiscoveryError(f"{where} is neither a mapping nor an iterable of Flow: {declared!r}")
    grouped: dict[str, list[Flow]] = {}
    for position, flow in enumerate(declared):
        if not isinstance(flow, Flow):
            raise FlowDiscoveryError(f"{where}[{position}] is not a Flow: {flow!r}")
        grouped.setdefault(flow.name, []).append(flow)
    return {workflow_id: _versions(where, workflow_id, flows) for workflow_id, flows in grouped.items()}


def _versions(where: str, workflow_id: object, entry: object) -> tuple[Flow, ...]:
    """One declaration checked: a Flow, or a non-empty list of Flow versions of distinct structure."""
    problem = ids.id_problem(workflow_id)
    if problem is not None:
        raise FlowDiscoveryError(f"{where}: invalid workflow id {workflow_id!r}: {problem}")
    named = f"{where}[{workflow_id!r}]"
    if isinstance(entry, Flow):
        return (entry,)
    if isinstance(entry, str | bytes) or not isinstance(entry, Sequence):
        raise FlowDiscoveryError(f"{named} is neither a Flow nor a list of its versions: {entry!r}")
    if not entry:
        raise FlowDiscoveryError(f"{named} is an empty list: declare at least one version")
    seen: dict[str, int] = {}
    for position, flow in enumerate(entry):
        if not isinstance(flow, Flow):
            raise FlowDiscoveryError(f"{named}[{position}] is not a Flow: {flow!r}")
        digest = schema.structural_hash(flow)
        if digest in seen:
            raise FlowDiscoveryError(
                f"{named}: versions {seen[digest]} and {position} have the same structure (hash {digest}); "
                "versions are told apart by structure, so declare one of them"
            )
        seen[digest] = position
    return tuple(entry)


def schedules_of(module_name: str) -> list[schedules.ScheduleSpec]:
    """The schedules a module declares in SCHEDULES, checked (empty when it declares none)."""
    declared = getattr(importlib.import_module(module_name), "SCHEDULES", None)
    if declared is None:
        return []
    where = f"{module_name}.SCHEDULES"
    if isinstance(declared, str | bytes | Mapping) or not isinstance(declared, Iterable):
        raise FlowDiscoveryError(
            f"{where} is not a list of schedules (flowdeck.scheduled(...)): {declared!r}"
        )
    found: list[schedules.ScheduleSpec] = []
    for position, spec in enumerate(declared):
        if not isinstance(spec, schedules.ScheduleSpec):
            raise FlowDiscoveryError(
                f"{where}[{position}] is not a schedule (flowdeck.scheduled(...)): {spec!r}"
            )
        try:
            schedule_ticks.check_spec(spec)
        except errors.FlowScheduleError as error:
            raise FlowDiscoveryError(f"{where}[{position}]: {error}") from None
        if any(spec.name == other.name for other in found):
            raise FlowDiscoveryError(f"{where}: schedule {spec.name!r} is declared twice")
        found.append(spec if spec.declared else dataclasses.replace(spec, declared=True))
    return found


def _add_schedules(source: str) -> None:
    for spec in schedules_of(source):
        existing = _schedules.get(spec.name)
        if existing is not None and existing[0] != source:
            raise FlowDiscoveryError(
                f"schedule {spec.name!r} is declared twice (in {existing[0]} and {source})"
            )
        _schedules[spec.name] = (source, spec)


def declared_schedules(only: Iterable[str] | None = None) -> list[schedules.ScheduleSpec]:
    """Every schedule the discovered flows modules declare (of the workflow ids in `only`, when given)."""
    kept = None if only is None else set(only)
    return [spec for _, spec in _schedules.values() if kept is None or spec.workflow_id in kept]


def _add_rate_limits(source: str) -> None:
    declared = getattr(importlib.import_module(source), "RATE_LIMITS", None)
    if declared is None:
        return
    try:
        found = rate_limits.limits_of(f"{source}.RATE_LIMITS", declared)
    except ValueError as error:
        raise FlowDiscoveryError(str(error)) from None
    for name, limit in found.items():
        existing = _rate_limits.get(name)
        if existing is not None and existing[0] != source and existing[1] != limit:
            raise FlowDiscoveryError(f"rate limit {name!r} is declared twice (in {existing[0]} and {source})")
        _rate_limits[name] = (source, limit)


def declared_rate_limits() -> dict[str, rate_limits.RateLimit]:
    """Every rate limit the discovered flows modules declare, by name."""
    return {name: limit for name, (_, limit) in sorted(_rate_limits.items())}


def _add(source: str, flows: Mapping[str, tuple[Flow, ...]]) -> None:
    for workflow_id, versions in flows.items():
        existing = _flows.get(workflow_id)
        if existing is not None and not _same(existing, versions):
            raise FlowDiscoveryError(f"workflow id {workflow_id!r} is declared twice (again in {source})")
        _flows[workflow_id] = versions


def _same(one: tuple[Flow, ...], other: tuple[Flow, ...]) -> bool:
    return len(one) == len(other) and all(a is b for a, b in zip(one, other, strict=True))


def discover(extra_modules: Iterable[str] = ()) -> dict[str, Flow]:
    """Import every app's flows module and the configured ones; answer every workflow found so far (its
    newest version). With a Flowdeck tasks backend configured, each app's `tasks` module too: the tasks
    found there, and in the configured modules, are served as workflows (`console.task_flows`)."""
    for module in autodiscover_modules_named("flows"):
        _add(module, flows_of(module))
        _add_schedules(module)
        _add_rate_limits(module)
    configured = (*flowdeck_settings().flow_modules, *extra_modules)
    for module in configured:
        _add(module, flows_of(module))
        _add_schedules(module)
        _add_rate_limits(module)
    if _tasks_backend_configured():
        for module in (*autodiscover_modules_named("tasks"), *configured):
            _add(module, task_flows.flows_in(module))
    return registered_flows()


def _tasks_backend_configured() -> bool:
    """Does TASKS name Flowdeck's backend (by its path: reading it must not build the backends)?"""
    from django.conf import settings

    backends = getattr(settings, "TASKS", None) or {}
    return any(str(conf.get("BACKEND", "")).startswith("flowdeck.") for conf in backends.values())


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
    """Every workflow discovered in this process, by id: its newest version (what new starts use)."""
    return {workflow_id: versions[-1] for workflow_id, versions in _flows.items()}


def flow_versions() -> dict[str, tuple[Flow, ...]]:
    """Every workflow discovered in this process, by id: all its declared versions, oldest first."""
    return dict(_flows)


def served(only: Iterable[str] | None = None) -> list[tuple[str, Flow]]:
    """What a process registers, in order: each workflow's versions oldest first, so that the last one
    registered (the newest) is what new starts use. `only` keeps those workflow ids (all when None)."""
    kept = None if only is None else set(only)
    return [
        (workflow_id, flow)
        for workflow_id, versions in _flows.items()
        if kept is None or workflow_id in kept
        for flow in versions
    ]
