"""Flows modules: `FLOWS` declares a workflow's versions (a list, oldest first), the plain and iterable
shapes keep working, and a bad declaration is refused at discovery naming the module and the workflow id,
adding nothing to what the process serves."""

from __future__ import annotations

import sys
import types

import pytest

from flowdeck.console import discovery
from flowdeck.engine import Flow, schema
from tests.console.versioned_flows import V0, V1, V2

MODULE = "tests.console.declared_here"
PLAIN = Flow.init("plain").output("x", lambda ctx: 1, type=int)


@pytest.fixture
def module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A flows module made in the test (its FLOWS set by each case); the process's discovered set is put
    back afterwards."""
    made = types.ModuleType(MODULE)
    monkeypatch.setitem(sys.modules, MODULE, made)
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    return made


def test_a_list_declares_versions_oldest_first_and_every_process_serves_them_in_order(
    module: types.ModuleType,
) -> None:
    module.FLOWS = {"versioned": [V1, V2], "plain": PLAIN}
    assert discovery.flows_of(MODULE) == {"versioned": (V1, V2), "plain": (PLAIN,)}
    before = discovery.served()
    found = discovery.discover([MODULE])
    assert (found["versioned"], found["plain"]) == (V2, PLAIN)  # the newest is what new starts use
    assert discovery.flow_versions()["versioned"] == (V1, V2)
    assert discovery.served() == [*before, ("versioned", V1), ("versioned", V2), ("plain", PLAIN)]
    assert discovery.served(["versioned"]) == [("versioned", V1), ("versioned", V2)]


def test_an_iterable_declares_versions_by_flow_name(module: types.ModuleType) -> None:
    module.FLOWS = [V0, PLAIN, V2]
    assert discovery.flows_of(MODULE) == {"versioned": (V0, V2), "plain": (PLAIN,)}


BAD = [
    pytest.param(
        {"versioned": []}, "['versioned'] is an empty list: declare at least one version", id="empty"
    ),
    pytest.param(
        {"versioned": [V1, "v2"]}, "['versioned'][1] is not a Flow: 'v2'", id="not-a-flow-in-the-list"
    ),
    pytest.param(
        {"versioned": print},
        "['versioned'] is neither a Flow nor a list of its versions: <built-in function print>",
        id="value",
    ),
    pytest.param(
        {"versioned": "v1"}, "['versioned'] is neither a Flow nor a list of its versions: 'v1'", id="string"
    ),
    pytest.param(
        {"a/b": V1}, ": invalid workflow id 'a/b': must not contain '/' (at position 1)", id="slash"
    ),
    pytest.param(
        {"bad\nid": [V1]},
        ": invalid workflow id 'bad\\nid': must not contain the control character U+000A (at position 3)",
        id="newline",
    ),
    pytest.param({"": V1}, ": invalid workflow id '': must not be empty", id="empty-id"),
    pytest.param({"..": V1}, ": invalid workflow id '..': must not be '.' or '..'", id="dots"),
    pytest.param(
        {"versioned": [V1, V1]},
        f"['versioned']: versions 0 and 1 have the same structure (hash {schema.structural_hash(V1)}); "
        "versions are told apart by structure, so declare one of them",
        id="same-structure",
    ),
    pytest.param([V1, 42], "[1] is not a Flow: 42", id="iterable"),
    pytest.param(42, " is neither a mapping nor an iterable of Flow: 42", id="neither"),
]


@pytest.mark.parametrize(("declared", "message"), BAD)
def test_a_bad_declaration_is_refused_naming_the_module_and_the_id(
    module: types.ModuleType, declared: object, message: str
) -> None:
    module.FLOWS = declared
    before = discovery.served()
    with pytest.raises(discovery.FlowDiscoveryError) as refused:
        discovery.discover([MODULE])
    assert str(refused.value) == f"{MODULE}.FLOWS{message}"
    assert discovery.served() == before
