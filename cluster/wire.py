"""Dataclasses to msgpack and back, driven by their type hints: the one codec of every
message between processes.

One definition per message: a dataclass says what it holds, and this module says how
any of them travels, as the list of its fields in order. Decoding checks every value
against its type on the way in, so a forged or truncated frame raises
`MalformedMessage`, naming the message and the field at fault, instead of being
half-applied. The encoder and decoder of each type are built once from its hints and
kept: a batch holds hundreds of values, and reading the hints again for each cost more
than the rest.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, Self, TypeVar

import msgpack

T = TypeVar("T")
_SCALARS = (int, str, bool, float, bytes)
# checked by type alone: msgpack unpacks them as exactly these (a float may come as an int)
_EXACT = (int, str, bool, bytes)

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]


class MalformedMessage(ValueError):
    """A frame that does not fit its message type: it is dropped, never applied. The text
    names the type, where in it, and what is wrong:
    `ShardResult.decisions[2].nodes: expected int, got str 'x'`."""


class Wire:
    """A dataclass that travels: as a frame of its own (`encode`, `decode`), or as a part
    of another (`to_wire`, `from_wire`, the plain lists msgpack packs)."""

    __slots__ = ()

    def to_wire(self) -> list[Any]:
        kind: Any = type(self)  # Any-typed, as in from_wire: mypy thinks classes unhashable
        encoded: list[Any] = _class_encoder(kind)(self)
        return encoded

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        return from_wire(cls, wire)

    def encode(self) -> bytes:
        packed: bytes = msgpack.packb(self.to_wire(), use_bin_type=True)
        return packed

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """The message a frame holds; MalformedMessage if it holds anything else."""
        try:
            wire = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except (TypeError, ValueError) as err:  # short or garbled; an unhashable map key
            raise MalformedMessage(f"{cls.__name__}: {err}") from None
        return from_wire(cls, wire)


def to_wire(obj: Any) -> Any:
    """Any value's wire form, walked value by value: for what a type hint leaves open."""
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


@functools.cache
def _class_encoder(kind: type) -> Encoder:
    """A dataclass's encoder, written out field by field (`_compile`): the list of its
    fields, each as it is unless its type needs walking, and even then not when it is None
    or empty (its own wire form)."""
    env: dict[str, Any] = {}
    items = []
    for i, (name, hint) in enumerate(_fields(kind)):
        item = _sequence_item(hint)
        encode = _encoder(hint if item is None else item)
        if encode is _as_is:
            items.append(f"obj.{name}")
            continue
        env[f"e{i}"] = encode
        walked = f"e{i}(v{i})" if item is None else f"[e{i}(x) for x in v{i}]"
        items.append(f"({walked} if (v{i} := obj.{name}) else v{i})")
    return _compile("encode", f"def encode(obj):\n    return [{', '.join(items)}]", env)


def _compile(name: str, source: str, env: dict[str, Any]) -> Callable[[Any], Any]:
    """The function `name` that `source` defines, with `env` as its globals. Encoders and
    decoders of dataclasses are written out field by field, as `dataclasses` writes
    `__init__`: a batch holds thousands of fields, and a call or a loop step for each
    cost twice what the hand-written codecs did."""
    exec(source, env)
    compiled: Callable[[Any], Any] = env[name]
    return compiled


def _sequence_item(tp: Any) -> Any:
    """X for list[X] and tuple[X, ...]; None for any other type."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return args[0]
    return None


def _encoder(tp: Any) -> Encoder:
    """What a value of type `tp` needs before msgpack packs it; `_as_is` for nothing
    (scalars, enums of str or int, and lists, tuples and maps of them)."""
    if isinstance(tp, type) and issubclass(tp, _SCALARS):
        return _as_is
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _class_encoder(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        (inner,) = [a for a in args if a is not type(None)]
        encode = _encoder(inner)
        return _as_is if encode is _as_is else lambda v: None if v is None else encode(v)
    if _sequence_item(tp) is not None:
        item = _encoder(args[0])
        return _as_is if item is _as_is else lambda v: [item(x) for x in v]
    if origin is tuple:
        items = [_encoder(a) for a in args]
        if all(e is _as_is for e in items):
            return _as_is
        return lambda v: [e(x) for e, x in zip(items, v, strict=True)]
    if origin is dict:
        key, value = _encoder(args[0]), _encoder(args[1])
        if key is _as_is and value is _as_is:
            return _as_is
        return lambda v: {key(k): value(x) for k, x in v.items()}
    return to_wire  # Any and the rest: walked value by value


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def from_wire(tp: type[T], data: Any) -> T:
    """Rebuild a value of type `tp` from its wire form; MalformedMessage if it does not fit."""
    # Through an Any-typed name: mypy does not count class objects as Hashable (it checks
    # the instances' __hash__), though every class hashes and _decoder's cache keys on it.
    hint: Any = tp
    decode = _decoder(hint)  # out of the try: a type it cannot decode is a bug, not a bad frame
    try:
        decoded: T = decode(data)
    except (TypeError, ValueError) as err:
        fault = _within(tp.__name__, err)
        raise MalformedMessage(f"{fault.at}: {fault.problem}") from None
    return decoded


class _Misfit(TypeError):
    """A value that does not fit its type: what is wrong, and where (`.field[index]...`)."""

    def __init__(self, problem: str, at: str = "") -> None:
        super().__init__(f"{at}: {problem}" if at else problem)
        self.problem = problem
        self.at = at


def _within(where: str, err: Exception) -> _Misfit:
    """`err`, raised in the part at `where` of a value: the path grows outward."""
    if isinstance(err, _Misfit):
        return _Misfit(err.problem, where + err.at)
    return _Misfit(str(err), where)


def _locate(err: Exception, parts: Iterable[tuple[str, Decoder, Any]]) -> _Misfit:
    """Which part of a value `err` came from, found by decoding the parts again one by one:
    only a bad frame pays for knowing where, not every good one."""
    for where, decode, value in parts:
        try:
            decode(value)
        except (TypeError, ValueError) as inner:
            return _within(where, inner)
    return _within("", err)  # each part fits: the whole does not (its class refused them)


def _brief(data: Any) -> str:
    if isinstance(data, (list, tuple, dict)):
        return f"a {type(data).__name__} of {len(data)}"
    return f"{type(data).__name__} {data!r:.60}"


@functools.cache
def _decoder(tp: Any) -> Decoder:
    """The checking decoder for one type hint, built once."""
    if tp is Any:
        return _as_is
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_decoder(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    if tp in _SCALARS:
        return _scalar_decoder(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        decode = _decoder(inner)
        if type(None) not in args:
            return decode
        return lambda data: None if data is None else decode(data)
    if _sequence_item(tp) is not None:
        return _sequence_decoder(origin, args[0])
    if origin is tuple:
        return _tuple_decoder(args)
    if origin is dict:
        return _map_decoder(args[0], args[1])
    raise TypeError(f"cannot decode type {tp!r}")


def _as_is(data: Any) -> Any:
    return data


class _Unlike:
    """The type no value has: the check by type of what is not a scalar always fails, so
    its decoder runs."""


def _exact(tp: Any) -> type:
    """The type a value of hint `tp` has as msgpack unpacks it, if that alone checks it."""
    return tp if tp in _EXACT else _Unlike


def _dataclass_decoder(tp: type) -> Decoder:
    """A dataclass from the list of its fields, its decoder written out field by field
    (`_compile`): a scalar, or a list or map of them, checked by types in line, any other
    field by its decoder; where a check in line fails, the field's decoder says why."""
    fields = _fields(tp)
    decoders = [_decoder(hint) for _, hint in fields]
    count = len(fields)

    def shape(data: Any) -> Any:
        if isinstance(data, (list, tuple)) and len(data) == count:
            return data  # a tuple: made in this process
        raise _Misfit(f"expected the {count} fields of {tp.__name__}, got {_brief(data)}")

    def locate(err: Exception, data: Any) -> _Misfit:
        names = [f".{name}" for name, _ in fields]
        return _locate(err, zip(names, decoders, data, strict=True))

    env: dict[str, Any] = {"tp": tp, "shape": shape, "locate": locate}
    names = "".join(f"f{i}, " for i in range(count))
    lines = []
    for i, ((_, hint), decode) in enumerate(zip(fields, decoders, strict=True)):
        env[f"d{i}"] = decode
        if decode is not _as_is:
            lines += _field_check(f"f{i}", f"d{i}", hint, env)
    body = "".join(f"        {line}\n" for line in lines)
    source = (
        "def decode(data):\n"
        f"    if type(data) is not list or len(data) != {count}: data = shape(data)\n"
        f"    {names}= data\n"
        "    try:\n"
        f"{body}"
        f"        return tp({names})\n"
        "    except (TypeError, ValueError) as err:\n"
        "        raise locate(err, data) from None\n"
    )
    return _compile("decode", source, env)


def _field_check(f: str, d: str, hint: Any, env: dict[str, Any]) -> list[str]:
    """The lines that check field `f` of type `hint` in line, calling its decoder `d`
    only where they find something they cannot pass: scalars, lists of scalars or of
    tuples of them (what a batch holds thousands of), and empty maps. A list of anything
    else is decoded item by item in line; where an item fails, `d` says which."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _EXACT:
        env[f"t_{f}"] = hint
        return [f"if type({f}) is not t_{f}: {f} = {d}({f})"]
    item = args[0] if origin is list else None
    if item in _EXACT:
        env[f"t_{f}"] = item
        misfit, passed = f"type(x) is not t_{f}", f
    elif typing.get_origin(item) is tuple and all(a in _EXACT for a in typing.get_args(item)):
        kinds = typing.get_args(item)
        env.update({f"t_{f}_{j}": kind for j, kind in enumerate(kinds)})
        misfit = f"type(x) is not list or len(x) != {len(kinds)}" + "".join(
            f" or type(x[{j}]) is not t_{f}_{j}" for j in range(len(kinds))
        )
        passed = f"[tuple(x) for x in {f}]"
    elif origin is list:  # of dataclasses, say: each by its decoder, in line
        env[f"i_{f}"] = _decoder(item)
        return [f"{f} = [i_{f}(x) for x in {f}] if type({f}) is list else {d}({f})"]
    elif origin is dict:  # empty: as msgpack made it
        return [f"if type({f}) is not dict or {f}: {f} = {d}({f})"]
    else:
        return [f"{f} = {d}({f})"]
    lines = [
        f"if type({f}) is list:",
        f"    for x in {f}:",
        f"        if {misfit}:",
        f"            {f} = {d}({f})",
        "            break",
    ]
    if passed != f:
        lines.append(f"    else: {f} = {passed}")
    return [*lines, f"else: {f} = {d}({f})"]


def _sequence_decoder(origin: type, item_type: Any) -> Decoder:
    """list[X] or tuple[X, ...]. A list of scalars is checked by a plain loop over their
    types and kept as msgpack made it: most of a batch's lists are names and versions."""
    item = _decoder(item_type)
    make: Callable[[Any], Any] = list if origin is list else tuple
    exact = _exact(item_type)

    def decode(data: Any) -> Any:
        if not isinstance(data, (list, tuple)):
            raise _Misfit(f"expected a list, got {_brief(data)}")
        for x in data:
            if type(x) is not exact:
                break
        else:
            return data if type(data) is origin else make(data)
        try:
            return make([item(x) for x in data])
        except (TypeError, ValueError) as err:
            raise _locate(err, ((f"[{i}]", item, x) for i, x in enumerate(data))) from None

    return decode


def _tuple_decoder(item_types: tuple[Any, ...]) -> Decoder:
    """tuple[X, Y, ...]. One of scalars is checked by its items' types at once."""
    checks = [(_exact(a), _decoder(a)) for a in item_types]
    exact = tuple(t for t, _ in checks)
    count = len(checks)

    def decode(data: Any) -> tuple[Any, ...]:
        if type(data) is list and tuple(map(type, data)) == exact:
            return tuple(data)
        if not isinstance(data, (list, tuple)) or len(data) != count:
            raise _Misfit(f"expected {count} items, got {_brief(data)}")
        try:
            return tuple(
                [x if type(x) is t else d(x) for (t, d), x in zip(checks, data, strict=True)]
            )
        except (TypeError, ValueError) as err:
            parts = (
                (f"[{i}]", d, x) for i, ((_, d), x) in enumerate(zip(checks, data, strict=True))
            )
            raise _locate(err, parts) from None

    return decode


def _map_decoder(key_type: Any, value_type: Any) -> Decoder:
    """dict[K, V]. A map of scalars is checked by a plain loop over their types and kept
    as msgpack made it, as a list of them is."""
    key, value = _decoder(key_type), _decoder(value_type)
    exact_key, exact_value = _exact(key_type), _exact(value_type)

    def decode(data: Any) -> dict[Any, Any]:
        if not isinstance(data, dict):
            raise _Misfit(f"expected a map, got {_brief(data)}")
        for k, v in data.items():
            if type(k) is not exact_key or type(v) is not exact_value:
                break
        else:
            return data
        try:
            return {key(k): value(v) for k, v in data.items()}
        except (TypeError, ValueError) as err:
            parts = (
                part
                for k, v in data.items()
                for part in ((f"[{k!r}]", key, k), (f"[{k!r}]", value, v))
            )
            raise _locate(err, parts) from None

    return decode


def _enum_decoder(tp: type[enum.Enum]) -> Decoder:
    """A member by its value, looked up: calling the enum costs ten times as much."""
    members = {member.value: member for member in tp}

    def decode(data: Any) -> enum.Enum:
        member = members.get(data)  # TypeError for a value that cannot be a key
        if member is None:
            raise _Misfit(f"expected a {tp.__name__}, got {_brief(data)}")
        return member

    return decode


def _scalar_decoder(tp: type) -> Decoder:
    def decode(data: Any) -> Any:
        if type(data) is tp:
            return data
        if tp is float and type(data) is int:
            return float(data)
        # a subclass (a str enum where a str is due), made in this process; not bool for int
        if isinstance(data, tp) and not (tp is int and isinstance(data, bool)):
            return data
        raise _Misfit(f"expected {tp.__name__}, got {_brief(data)}")

    return decode
