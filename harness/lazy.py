"""Packages whose public names load on first use (PEP 562).

A package's ``__init__`` that imports every module it re-exports makes any
import of one of them (``harness.suites.scenario``, the WhatsApp channel's
plugin) pay for all the others: ``harness --help`` would load the runner, the
reports and Redis's client to print a list of commands. Such a package maps
each public name to the module that owns it instead, and takes its
``__getattr__`` and ``__dir__`` from :func:`lazy_names`: ``package.Name``
then imports the one module that holds it, once.

The package keeps a ``TYPE_CHECKING`` block importing the same names, so type
checkers see them all at once; a test compares the map with the modules'
``__all__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_names"]


def lazy_names(
    package: str, owners: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names ``owners`` maps to modules.

    ``__getattr__`` imports a name's module when the name is first asked for,
    and keeps the value in the package so the next lookup is a plain one;
    ``__dir__`` lists the names loaded so far and every public one. A name
    that is also the name of the module holding it (``registry`` in
    ``harness.suites.registry``) is bound at once: importing that module
    would otherwise bind the module under the name, for good.
    """
    namespace = sys.modules[package].__dict__
    for name, module in owners.items():
        if module == f"{package}.{name}":
            namespace[name] = getattr(importlib.import_module(module), name)

    def load(name: str) -> object:
        """The public ``name``, imported from its module and kept for next time."""
        try:
            module = owners[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def listing() -> list[str]:
        """The loaded globals and every public name, loaded or not."""
        return sorted({*namespace, *owners})

    return load, listing
