"""`lint(flow)`: what registration would refuse, found early, plus two pieces of advice.

The collision warnings are exactly the collisions registration refuses, no broader: a lint that warned
about the canonical race, or about an input two branches wait on, would teach its author that correct code
is wrong. The advice (a dispatch with no conditional arm, a body reading a field no earlier node produces)
is not a gate: registration accepts both.

Reading `ctx.<name>` is checked by parsing the body's source (lambdas included); where the source is not
available the body is skipped silently, since a lint must never guess.
"""

from __future__ import annotations

import ast
import difflib
import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flowdeck.engine import arguments, nodes, schema, traversal
from flowdeck.engine.nodes import NO_STATE, Body

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["CTX_EXTRAS", "LintWarning", "lint"]

CTX_EXTRAS = frozenset({"key", "execution_id", "attempt", "undo"})
"""What `ctx` offers besides the record (DESIGN §2)."""


@dataclass(frozen=True)
class LintWarning:
    """One finding: a stable `code`, a readable `message`, the durable `name` concerned and the call
    sites ("file:line") of every node involved."""

    code: str
    message: str
    name: str
    locations: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def lint(flow: Flow) -> list[LintWarning]:
    """Every registration refusal (unnamed, reserved character, duplicate durable name, F0006) with call
    sites, then advice: dispatches with only an otherwise, and `ctx` reads no earlier node satisfies."""
    warnings = [*_refusals(flow), *_empty_dispatches(flow)]
    _Fields(warnings).walk(flow, {}, "")
    return warnings


def _refusals(flow: Flow) -> list[LintWarning]:
    """What registration would refuse, each with the call sites involved."""
    warnings: list[LintWarning] = []
    if not isinstance(flow.name, str) or not flow.name.strip():
        warnings.append(LintWarning("unnamed", 'the flow has no name: use Flow.init("name")', ""))
    for name, location in schema.reserved_names(flow):
        warnings.append(
            LintWarning(
                "reserved-name",
                f"node name {name!r} uses a reserved character ('~' or '#'), which the engine builds keys "
                "with; registration refuses it",
                name,
                (location,) if location else (),
            )
        )
    for path, group in schema.collisions(flow).items():
        sites = tuple(c.location for c in group)
        warnings.append(
            LintWarning(
                "duplicate-name",
                f"{len(group)} nodes claim the durable name {path!r} ({'; '.join(sites)}): one name is one "
                "field and one completion mark, so registration refuses this; rename all but one",
                path,
                sites,
            )
        )
    for path, arms in schema.branch_collisions(flow).items():
        sites = tuple(a.location for a in arms)
        warnings.append(
            LintWarning(
                "duplicate-branch",
                f"{len(arms)} arms of a dispatch share one name ({path}); the recorded choice could not tell "
                "them apart, so registration refuses this",
                path,
                sites,
            )
        )
    return [*warnings, *_listen_mismatch(flow)]


def _listen_mismatch(flow: Flow) -> list[LintWarning]:
    mismatch = schema.listen_mismatch(flow)
    if not mismatch:
        return []
    listening, deaf = mismatch
    return [
        LintWarning(
            "listen-mismatch",
            f"F0006: on_cancel is given in {', '.join(map(repr, listening))} but not in "
            f"{', '.join(map(repr, deaf))}; a flow that listens for cancellation in one wait must listen "
            "in every wait, so registration refuses this",
            deaf[0],
        )
    ]


def _empty_dispatches(flow: Flow) -> list[LintWarning]:
    return [
        LintWarning(
            "empty-dispatch",
            f"dispatch {claim.path!r} has no conditional arm (.when): it always takes its otherwise; "
            "an output would say the same more simply",
            claim.path,
            (claim.node.location,),
        )
        for claim in schema.claims(flow)
        if isinstance(claim.node, nodes.Dispatch) and not claim.node.branches
    ]


# ------------------------------------------------------------------------------------ ctx reads

Scope = dict[str, "Scope | None"]
"""The fields a body's ctx holds at a node: a name maps to the subflow's own scope, or None for a value."""


class _Fields(traversal.Visitor[None]):
    """Walks a flow in execution order, tracking which fields exist, and checks each body's ctx reads.
    Each visit checks its node's bodies against `available` (what earlier nodes produce; a compensate=
    handler also sees the node's own value), then adds what the node produces."""

    def __init__(self, warnings: list[LintWarning]) -> None:
        self.warnings = warnings

    def walk(self, flow: Flow, available: Scope, prefix: str) -> Scope:
        available = dict(available)
        for node in flow.nodes:
            self.visit(node, prefix, available)
        return available

    def visit_parallel(self, node: nodes.Parallel, prefix: str, available: Scope) -> None:
        produced: Scope = {}
        for branch in node.branches:
            produced.update(self.walk(branch, available, prefix))
        available.update(produced)

    def visit_input(self, node: nodes.Input, prefix: str, available: Scope) -> None:
        self.check(traversal.qualify(prefix, node.name), node, node.on_cancel, 0, available)
        available[node.name] = None

    def visit_sleep(self, node: nodes.Sleep, prefix: str, available: Scope) -> None:
        self.check(traversal.qualify(prefix, node.name), node, node.on_cancel, 0, available)

    def visit_output(self, node: nodes.Output, prefix: str, available: Scope) -> None:
        self.valued(node, prefix, available, [(node.body, 0)], node.compensate)

    def visit_step(self, node: nodes.Step, prefix: str, available: Scope) -> None:
        path = traversal.qualify(prefix, node.name)
        self.check(path, node, node.body, 0, available)
        self.check(path, node, node.compensate, 0, {**available, node.name: None})

    def visit_dispatch(self, node: nodes.Dispatch, prefix: str, available: Scope) -> None:
        arms = (*node.branches, *([node.default] if node.default else []))
        bodies = [(body, 0) for arm in arms for body in (arm.condition, arm.body)]
        self.valued(node, prefix, available, bodies, node.compensate)

    def visit_loop(self, node: nodes.Loop, prefix: str, available: Scope) -> None:
        self.valued(node, prefix, available, [(node.body, _ctx_at(node.initial))], node.compensate)

    def visit_loop_on(self, node: nodes.LoopOn, prefix: str, available: Scope) -> None:
        self.valued(node, prefix, available, [(node.body, _ctx_at(node.initial))], node.compensate)

    def visit_foreach(self, node: nodes.ForEach, prefix: str, available: Scope) -> None:
        self.valued(node, prefix, available, [(node.items, 0), (node.body, 1)], None)

    def visit_subflow(self, node: nodes.Subflow, prefix: str, available: Scope) -> None:
        path = traversal.qualify(prefix, node.name)
        self.check(path, node, node.mapper, 0, available)
        available[node.name] = self.walk(node.child, {}, path)

    def valued(
        self,
        node: nodes.Node,
        prefix: str,
        available: Scope,
        bodies: list[tuple[Body | None, int]],
        compensate: Body | None,
    ) -> None:
        """A node with a value: its bodies (with where their ctx parameter sits), its handler, then its
        value is available downstream."""
        path = traversal.qualify(prefix, node.name)
        for body, ctx_index in bodies:
            self.check(path, node, body, ctx_index, available)
        self.check(path, node, compensate, 0, {**available, node.name: None})
        available[node.name] = None

    def check(self, path: str, node: nodes.Node, body: Body | None, ctx_index: int, available: Scope) -> None:
        if body is None:
            return
        for read in _ctx_reads(body.fn, ctx_index):
            message = _unknown(read, available)
            if message:
                sites = tuple(dict.fromkeys(s for s in (node.location, read.location) if s))
                self.warnings.append(LintWarning("unknown-field", f"{path!r}: {message}", path, sites))


def _ctx_at(initial: object) -> int:
    """Where a loop body's ctx sits: `body(ctx)`, or `body(state, ctx)` for a stateful loop."""
    return 0 if initial is NO_STATE else 1


@dataclass(frozen=True)
class _Read:
    field: str
    inner: str | None
    location: str


def _unknown(read: _Read, available: Scope) -> str | None:
    """Why this read would fail at run time, or None when an earlier node provides it."""
    if read.field not in available:
        if read.field in CTX_EXTRAS:
            return None
        return f"reads ctx.{read.field}, but no earlier node produces {read.field!r}" + _hint(
            read.field, available
        )
    child = available[read.field]
    if child is not None and read.inner is not None and read.inner not in child:
        return (
            f"reads ctx.{read.field}.{read.inner}, but subflow {read.field!r} produces no {read.inner!r}"
            + _hint(read.inner, child)
        )
    return None


def _hint(name: str, available: Scope) -> str:
    close = difflib.get_close_matches(name, list(available), n=1)
    if close:
        return f"; did you mean ctx.{close[0]}?"
    return f" (available: {', '.join(available) or 'none'})"


# ---------------------------------------------------------------------------- reading a body's source

_TREES: dict[str, tuple[str, ast.Module | None]] = {}


def _tree(filename: str, module_globals: dict[str, Any] | None) -> ast.Module | None:
    source = "".join(linecache.getlines(filename, module_globals))
    if not source:
        return None
    cached = _TREES.get(filename)
    if cached is not None and cached[0] == source:
        return cached[1]
    try:
        tree: ast.Module | None = ast.parse(source, filename)
    except (SyntaxError, ValueError):
        tree = None
    _TREES[filename] = (source, tree)
    return tree


def _function_node(fn: Callable[..., Any]) -> ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The AST of `fn`'s own definition, found in its file by line and, for lambdas, by the columns
    its instructions cover (a line may hold several lambdas)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    tree = _tree(code.co_filename, getattr(fn, "__globals__", None))
    if tree is None:
        return None
    first = code.co_firstlineno
    if code.co_name == "<lambda>":
        spans = [
            (line, col, end_line, end_col)
            for line, end_line, col, end_col in code.co_positions()
            # RESUME and the implicit return carry no columns (0, 0)
            if None not in (line, end_line, col, end_col) and (col, end_col) != (0, 0)
        ]
        lambdas = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Lambda) and node.lineno == first and all(_covers(node, s) for s in spans)
        ]
        return min(lambdas, key=_span_size, default=None)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == code.co_name
            and first in (node.lineno, *(d.lineno for d in node.decorator_list))
        ):
            return node
    return None


def _covers(node: ast.AST, span: tuple[int, int, int, int]) -> bool:
    line, col, end_line, end_col = span
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    return start <= (line, col) and (end_line, end_col) <= end


def _span_size(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)  # type: ignore[attr-defined,operator]


def _ctx_reads(fn: Callable[..., Any], ctx_index: int) -> list[_Read]:
    """The `ctx.<field>` (and `ctx.<subflow>.<field>`) reads in a body, ctx being its parameter number
    `ctx_index`. Empty when the source cannot be read or the body takes no ctx."""
    try:
        node = _function_node(fn)
    except Exception:  # a lint must never break on a body it cannot read
        return []
    if node is None:
        return []
    params = [*node.args.posonlyargs, *node.args.args]
    if ctx_index >= len(params):
        return []
    ctx = params[ctx_index].arg
    filename = fn.__code__.co_filename
    finder = _ReadFinder(ctx, filename)
    for statement in node.body if isinstance(node.body, list) else [node.body]:
        finder.visit(statement)
    return list(dict.fromkeys(finder.reads))


class _ReadFinder(ast.NodeVisitor):
    def __init__(self, ctx: str, filename: str) -> None:
        self.ctx = ctx
        self.filename = filename
        self.reads: list[_Read] = []

    def _is_ctx(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.ctx

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_ctx(node.value) and isinstance(node.ctx, ast.Load):
            self.reads.append(_Read(node.attr, None, arguments.display_site(self.filename, node.lineno)))
            return
        if isinstance(node.value, ast.Attribute) and self._is_ctx(node.value.value):
            self.reads.append(
                _Read(node.value.attr, node.attr, arguments.display_site(self.filename, node.lineno))
            )
            return
        self.generic_visit(node)

    def _shadows(self, node: ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        args = node.args
        names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        return self.ctx in names

    def visit_Lambda(self, node: ast.Lambda) -> None:
        if not self._shadows(node):
            self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if not self._shadows(node):
            self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        if not self._shadows(node):
            self.generic_visit(node)
