"""Dataclasses to msgpack-ready lists and back, driven by their type hints.

One definition per message: a dataclass says what it holds, and this module
says how any of them travels. Decoding checks every type on the way in, so
a forged or truncated frame raises instead of being half-applied.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, Self, TypeVar

T = TypeVar("T")
_SCALARS = (int, str, bool, float, bytes)


def to_wire(obj: Any) -> Any:
    kind = type(obj)
    if kind in _SCALARS or obj is None:
        return obj
    if dataclasses.is_dataclass(kind):
        return _class_encoder(kind)(obj)
    if isinstance(obj, (list, tuple)):
        return [to_wire(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_wire(v) for k, v in obj.items()}
    return obj


Encoder = Callable[[Any], Any]


@functools.cache
def _class_encoder(kind: type) -> Encoder:
    """A dataclass's encoder, built once from its type hints: a batch encodes hundreds
    of classes, and walking each value's type again cost more than the rest."""
    fields = _fields(kind)
    encoders = [_encoder(hint) for _, hint in fields]
    if len(fields) == 1:
        (name, _), (encode,) = fields[0], encoders
        return lambda obj: [encode(getattr(obj, name))]
    values = operator.attrgetter(*(name for name, _ in fields))
    walked = [(i, e) for i, e in enumerate(encoders) if e is not _as_is]

    def encode_fields(obj: Any) -> list[Any]:
        out = list(values(obj))
        for i, encode in walked:
            if out[i]:  # None and empty sequences are their own wire form
                out[i] = encode(out[i])
        return out

    return encode_fields


def _encoder(tp: Any) -> Encoder:
    if tp in _SCALARS:
        return _as_is
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _class_encoder(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        (inner,) = [a for a in args if a is not type(None)]
        encode = _encoder(inner)
        return _as_is if encode is _as_is else lambda v: None if v is None else encode(v)
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        item = _encoder(args[0])
        return list if item is _as_is else lambda v: [item(x) for x in v]
    if origin is tuple:
        items = [_encoder(a) for a in args]
        if all(e is _as_is for e in items):
            return list
        return lambda v: [e(x) for e, x in zip(items, v, strict=True)]
    return to_wire  # Any, mappings and the rest: walked value by value


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def from_wire(tp: type[T], data: Any) -> T:
    """Rebuild a value of type `tp` from its wire form; TypeError/ValueError if it does not fit."""
    # Through an Any-typed name: mypy does not count class objects as Hashable (it checks
    # the instances' __hash__), though every class hashes and _decoder's cache keys on it.
    hint: Any = tp
    return _decoder(hint)(data)


Decoder = Callable[[Any], Any]


@functools.cache
def _decoder(tp: Any) -> Decoder:
    """The checking decoder for one type hint, built once: a batch decodes hundreds of
    classes, and reading the hints again for every value cost more than the rest."""
    if tp is Any:
        return _as_is
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        decode = _decoder(inner)
        if type(None) not in args:
            return decode
        return lambda data: None if data is None else decode(data)
    if origin in (tuple, list):
        return _sequence_decoder(origin, args)
    if origin is dict:
        key, value = _decoder(args[0]), _decoder(args[1])

        def decode_map(data: Any) -> dict[Any, Any]:
            if not isinstance(data, dict):
                raise TypeError(f"expected a map, got {data!r:.80}")
            return {key(k): value(v) for k, v in data.items()}

        return decode_map
    if tp in _SCALARS:
        return _scalar_decoder(tp)
    raise TypeError(f"cannot decode type {tp!r}")


def _as_is(data: Any) -> Any:
    return data


def _dataclass_decoder(tp: type) -> Decoder:
    fields = _fields(tp)
    decoders = [_decoder(hint) for _, hint in fields]
    count = len(fields)

    def decode(data: Any) -> Any:
        if not isinstance(data, (list, tuple)) or len(data) != count:
            raise TypeError(f"{tp.__name__}: expected {count} fields, got {data!r:.80}")
        return tp(*[d(value) for d, value in zip(decoders, data, strict=True)])

    return decode


def _sequence_decoder(origin: type, args: tuple[Any, ...]) -> Decoder:
    def checked(data: Any) -> list[Any] | tuple[Any, ...]:
        if not isinstance(data, (list, tuple)):
            raise TypeError(f"expected a list, got {data!r:.80}")
        return data

    if origin is list or (len(args) == 2 and args[1] is Ellipsis):
        item = _decoder(args[0])
        if origin is list:
            return lambda data: [item(x) for x in checked(data)]
        return lambda data: tuple([item(x) for x in checked(data)])
    items = [_decoder(a) for a in args]

    def decode_fixed(data: Any) -> tuple[Any, ...]:
        if len(checked(data)) != len(items):
            raise TypeError(f"expected {len(items)} items, got {data!r:.80}")
        return tuple([d(x) for d, x in zip(items, data, strict=True)])

    return decode_fixed


def _scalar_decoder(tp: type) -> Decoder:
    def decode(data: Any) -> Any:
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            if tp is float and isinstance(data, int) and not isinstance(data, bool):
                return float(data)
            raise TypeError(f"expected {tp.__name__}, got {data!r:.80}")
        return data

    return decode


class Wire:
    """For dataclasses that travel: `to_wire` and `from_wire`."""

    __slots__ = ()

    def to_wire(self) -> list[Any]:
        return to_wire(self)

    @classmethod
    def from_wire(cls, wire: list[Any]) -> Self:
        return from_wire(cls, wire)
