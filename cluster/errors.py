"""Errors that name the object, the field and the value at fault."""

from __future__ import annotations


class InvalidObject(ValueError):
    """A Kubernetes object that optimist cannot schedule as written.

    Only the object at fault is rejected; the message says which object,
    which field and which value, so a person can fix the manifest.
    """

    def __init__(self, obj: str, field: str, value: object, problem: str) -> None:
        self.obj = obj
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{obj}: {field}={value!r}: {problem}")
