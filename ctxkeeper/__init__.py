"""ctxkeeper: typed project memory for coding agents.

The package namespace stays empty on purpose: hooks import ``ctxkeeper.scope`` before
every edit, and anything imported here would be paid for on that hot path.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
