"""Whatever bytes arrive between processes, a message decodes or is MalformedMessage:
truncated frames, frames of another shape, values of the wrong type, for every kind."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.messages import ShardResult
from cluster.wire import MalformedMessage, Wire
from tests.cluster.test_messages import KINDS, samples, wire_of

# msgpack values nested a little: what a forged or garbled frame may hold
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)  # what msgpack can hold
    | st.floats()
    | st.text(max_size=8)
    | st.binary(),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=30,
)
by_kind = pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
by_sample = pytest.mark.parametrize("message", samples(), ids=lambda m: type(m).__name__)


def decodes_or_refuses(kind: Any, data: bytes) -> None:
    with contextlib.suppress(MalformedMessage):  # any other exception fails the test
        kind.decode(data)


@by_kind
@given(data=st.binary(max_size=200))
def test_random_bytes(kind: Any, data: bytes) -> None:
    decodes_or_refuses(kind, data)


@by_kind
@given(wire=values)
def test_random_structures(kind: Any, wire: Any) -> None:
    decodes_or_refuses(kind, msgpack.packb(wire, use_bin_type=True))


@by_sample
@given(data=st.data())
def test_every_truncation_of_a_real_frame_is_refused(message: Wire, data: st.DataObject) -> None:
    frame = message.encode()
    cut = data.draw(st.integers(min_value=0, max_value=len(frame) - 1))
    with pytest.raises(MalformedMessage):
        type(message).decode(frame[:cut])


@by_sample
@given(data=st.data(), value=values)
def test_a_real_frame_with_one_field_forged(message: Wire, data: st.DataObject, value: Any) -> None:
    wire = wire_of(message)
    wire[data.draw(st.integers(min_value=0, max_value=len(wire) - 1))] = value
    decodes_or_refuses(type(message), msgpack.packb(wire, use_bin_type=True))


@by_sample
@given(data=st.data(), value=values)
def test_a_real_frame_with_one_value_deep_inside_forged(
    message: Wire, data: st.DataObject, value: Any
) -> None:
    """Down the frame's lists, one step at a time, then one value replaced."""
    wire = wire_of(message)
    inside = wire
    while True:
        at = data.draw(st.integers(min_value=0, max_value=len(inside) - 1))
        if not isinstance(inside[at], list) or not inside[at] or data.draw(st.booleans()):
            break
        inside = inside[at]
    inside[at] = value
    decodes_or_refuses(type(message), msgpack.packb(wire, use_bin_type=True))


def test_a_decision_with_a_map_field_that_is_not_a_map_is_refused() -> None:
    """Found by the atheris run (`benchmarks/fuzz.py messages`): an AttributeError escaped."""
    wire = wire_of(samples()[1])
    wire[3][0][6] = 7  # the decision's preemptible candidates: a map
    with pytest.raises(MalformedMessage, match=r"decisions\[0\]\.preemptible: expected a map"):
        ShardResult.decode(msgpack.packb(wire, use_bin_type=True))
