"""The layer rules of ARCHITECTURE.md, on the installed names (`flowdeck.engine`, `flowdeck.store`,
`flowdeck.console`). `../shared/tools/house.py` checks them on the folders' old top-level names, which no
module imports any more since the one import root: this test is where they are enforced now. And one of
migrations: they import only the standard library and Django (ARCHITECTURE.md, `migrations/`)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the console modules that build the Django store (the composition root)
COMPOSITION_ROOT = {"console/runtime.py", "console/settings.py"}
RULES: list[tuple[str, tuple[str, ...], str]] = [
    (
        "engine/",
        ("django", "channels", "ninja", "psycopg", "flowdeck.console", "flowdeck.store.django"),
        "the engine is pure Python",
    ),
    ("store/", ("flowdeck.engine", "flowdeck.console"), "the store knows nothing above it"),
    ("engine/", ("examples", "bench", "tests"), "the product does not depend on its examples or benchmarks"),
    ("store/", ("examples", "bench", "tests"), "the product does not depend on its examples or benchmarks"),
    ("console/", ("examples", "bench", "tests"), "the product does not depend on its examples or benchmarks"),
]
FRAMEWORKS = ("django", "channels", "ninja", "psycopg")


def _imports(path: Path) -> list[tuple[int, str]]:
    names: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append((node.lineno, node.module))
    return names


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _problems(relative: str) -> list[str]:
    found = []
    for line, name in _imports(ROOT / relative):
        where = f"{relative}:{line} imports {name}"
        for folder, banned, why in RULES:
            if relative.startswith(folder) and _under(name, banned):
                found.append(f"{where} ({why})")
        if (
            relative.startswith("store/")
            and not relative.startswith("store/django/")
            and _under(name, FRAMEWORKS)
        ):
            found.append(f"{where} (the SPI, memory store and suite are framework-free)")
        if (
            relative.startswith("console/")
            and relative not in COMPOSITION_ROOT
            and _under(name, ("flowdeck.store.django",))
        ):
            found.append(
                f"{where} (the console talks to the store contract; only the composition root builds it)"
            )
    return found


PRODUCT = sorted(
    str(path.relative_to(ROOT))
    for folder in ("engine", "store", "console")
    for path in (ROOT / folder).rglob("*.py")
    if "migrations" not in path.parts
)


def test_the_rules_see_the_installed_names() -> None:
    """The check is not vacuous: the product imports itself as flowdeck.* and the rules name those."""
    names = {name for relative in PRODUCT for _, name in _imports(ROOT / relative)}
    assert any(name.startswith("flowdeck.store.django") for name in names)
    assert _problems("console/runtime.py") == []


@pytest.mark.parametrize("relative", PRODUCT)
def test_a_module_keeps_the_layer_rules(relative: str) -> None:
    assert _problems(relative) == []


MIGRATIONS = sorted(
    str(path.relative_to(ROOT))
    for folder in ("engine", "store", "console")
    for path in (ROOT / folder).rglob("migrations/*.py")
)


def test_the_migrations_are_found() -> None:
    assert "store/django/migrations/0018_event_partitions.py" in MIGRATIONS


def _foreign_imports(relative: str) -> list[str]:
    """The imports of a file that are neither the standard library nor Django (relative ones included)."""
    found = []
    for node in ast.walk(ast.parse((ROOT / relative).read_text(), relative)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        else:
            continue
        found += [
            f"{relative}:{node.lineno} imports {name}"
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names and not _under(name, ("django",))
        ]
    return found


def test_the_migration_check_sees_a_product_import() -> None:
    assert _foreign_imports("store/django/partitions.py") != []


@pytest.mark.parametrize("relative", MIGRATIONS)
def test_a_migration_imports_only_the_standard_library_and_django(relative: str) -> None:
    """A migration replays a schema change on databases of any age: were it to import the product, a later
    change there would make it build another schema than it did when written, or fail."""
    assert _foreign_imports(relative) == [], (
        "a migration imports only the standard library and Django: copy into it, as frozen constants, the "
        "SQL and values it needs from the product (as 0013 and 0018 do) instead of importing them"
    )
