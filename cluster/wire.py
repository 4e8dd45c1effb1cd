"""Dataclasses to msgpack-ready lists and back, driven by their type hints.

One definition per message: a dataclass says what it holds, and this module
says how any of them travels. Decoding checks every type on the way in, so
a forged or truncated frame raises instead of being half-applied.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import types
import typing
from typing import Any, Self, TypeVar

import msgpack

T = TypeVar("T")
_SCALARS = (int, str, bool, float, bytes)


def to_wire(obj: Any) -> Any:
    kind = type(obj)
    if kind in _SCALARS or obj is None:
        return obj
    names = _names(kind)
    if names is not None:
        return [to_wire(getattr(obj, name)) for name in names]
    if isinstance(obj, (list, tuple)):
        return [to_wire(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_wire(v) for k, v in obj.items()}
    return obj


@functools.cache
def _names(kind: type) -> tuple[str, ...] | None:
    """A dataclass's field names, looked up once per class (None for anything else):
    every batch encodes its classes, and every new class is digested."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(f.name for f in dataclasses.fields(kind))


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def from_wire(tp: type[T], data: Any) -> T:
    """Rebuild a value of type `tp` from its wire form; TypeError/ValueError if it does not fit."""
    return _decode(tp, data)  # type: ignore[no-any-return]


def _decode(tp: Any, data: Any) -> Any:
    if tp is Any:
        return data
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        fields = _fields(tp)
        if not isinstance(data, (list, tuple)) or len(data) != len(fields):
            raise TypeError(f"{tp.__name__}: expected {len(fields)} fields, got {data!r:.80}")
        return tp(*[_decode(hint, value) for (_, hint), value in zip(fields, data, strict=True)])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode(inner, data)
    if origin in (tuple, list):
        if not isinstance(data, (list, tuple)):
            raise TypeError(f"expected a list, got {data!r:.80}")
        if origin is list:
            return [_decode(args[0], x) for x in data]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], x) for x in data)
        if len(args) != len(data):
            raise TypeError(f"expected {len(args)} items, got {data!r:.80}")
        return tuple(_decode(a, x) for a, x in zip(args, data, strict=True))
    if origin is dict:
        if not isinstance(data, dict):
            raise TypeError(f"expected a map, got {data!r:.80}")
        return {_decode(args[0], k): _decode(args[1], v) for k, v in data.items()}
    if tp in _SCALARS:
        if tp is float and isinstance(data, int) and not isinstance(data, bool):
            return float(data)
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise TypeError(f"expected {tp.__name__}, got {data!r:.80}")
        return data
    raise TypeError(f"cannot decode type {tp!r}")


class Wire:
    """For dataclasses that travel: `to_wire`, `from_wire` and a digest of the wire form."""

    __slots__ = ()

    def to_wire(self) -> list[Any]:
        return to_wire(self)  # type: ignore[no-any-return]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> Self:
        return from_wire(cls, wire)

    def wire_digest(self, size: int) -> bytes:
        """A stable name for the value: equal values, equal digests, in every process."""
        return hashlib.blake2b(msgpack.packb(self.to_wire()), digest_size=size).digest()
