"""Errors in the declarations an extension makes (a fault primitive, a tool).

A mistake in a declaration is the extension author's, never a task file's: it is raised as
:class:`DeclarationError`, which is not a ``ValueError``, so task validation (pydantic turns
``ValueError`` into a field error of the file it is validating) cannot blame the task that happened to
load the registry first. The CLI prints it as one ``Error:`` line.
"""

from __future__ import annotations


class DeclarationError(Exception):
    """A fault primitive or tool declared with a mistake; the message names it, its class and the field."""
