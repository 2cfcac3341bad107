"""The merge driver's door: the command ``ctxkeeper init --git`` registers with git runs this
module's :func:`main`, so clones set up before the driver moved keep working; the driver
itself is :mod:`ctxkeeper.team.mergedriver`."""

from __future__ import annotations

from ctxkeeper.team.mergedriver import main

__all__ = ["main"]
