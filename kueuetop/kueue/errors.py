"""Errors raised when API data does not have the shape Kueue's API requires."""

from __future__ import annotations


class KueueParseError(ValueError):
    """A field of an API object is missing or malformed.

    The message always names the object (kind namespace/name) and the JSON path of the field,
    so a console line or a CLI error points at what to fix.
    """

    def __init__(self, obj: str, field: str, problem: str) -> None:
        self.obj = obj
        self.field = field
        self.problem = problem
        super().__init__(f"{obj}: {field}: {problem}" if field else f"{obj}: {problem}")


class QuantityError(ValueError):
    """A string is not a Kubernetes resource quantity."""
