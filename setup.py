"""The build's map of the repository into ONE installed package, `flowdeck` (ARCHITECTURE.md, "The installed
package"): the folders keep their places in the checkout and install as its subpackages. The packages
are found by walking the folders, so a new subpackage needs no entry here. The rest is in pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
FOLDERS = {
    "flowdeck": "public",
    "flowdeck.engine": "engine",
    "flowdeck.store": "store",
    "flowdeck.console": "console",
}


def packages() -> list[str]:
    found = ["flowdeck"]
    for package, folder in FOLDERS.items():
        if package == "flowdeck":
            continue
        for init in sorted((HERE / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(HERE / folder).parts
            if "__pycache__" not in parts and not any(p.startswith(".") for p in parts):
                found.append(".".join((package, *parts)))
    return found


setup(package_dir=FOLDERS, packages=packages())
