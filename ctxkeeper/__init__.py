"""ctxkeeper: typed project memory for coding agents.

The package namespace stays empty on purpose: hooks import ``ctxkeeper.core.scope`` before
every edit, and anything imported here would be paid for on that hot path. The same holds for
each layer's ``__init__.py`` (core, write, read, mcp, cli, plugin): a docstring, no imports.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
