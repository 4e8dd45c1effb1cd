"""Whatever bytes arrive between processes, a message decodes or is MalformedMessage:
truncated frames, frames of another shape, values of the wrong type."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.messages import (
    CommitReply,
    CommitRequest,
    Decision,
    MalformedMessage,
    PodPlacement,
    ShardBatch,
    ShardResult,
)

KINDS = [ShardBatch, ShardResult, CommitRequest, CommitReply]

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


def decodes_or_refuses(kind: Any, data: bytes) -> None:
    with contextlib.suppress(MalformedMessage):  # any other exception fails the test
        kind.decode(data)


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.binary(max_size=200))
def test_random_bytes(kind: Any, data: bytes) -> None:
    decodes_or_refuses(kind, data)


@pytest.mark.parametrize("kind", KINDS)
@given(wire=values)
def test_random_structures(kind: Any, wire: Any) -> None:
    decodes_or_refuses(kind, msgpack.packb(wire, use_bin_type=True))


def a_result() -> bytes:
    placed = Decision("ns/u", [PodPlacement("ns/p", 0, ["n1"], [3], [0])])
    return ShardResult(1, 2, 3, [placed], epoch="e").encode()


@given(cut=st.integers(min_value=0, max_value=len(a_result()) - 1))
def test_every_truncation_of_a_real_frame_is_refused(cut: int) -> None:
    with pytest.raises(MalformedMessage):
        ShardResult.decode(a_result()[:cut])


@given(field=st.integers(min_value=0, max_value=11), value=values)
def test_a_real_frame_with_one_field_forged(field: int, value: Any) -> None:
    wire = msgpack.unpackb(a_result(), raw=False, strict_map_key=False)
    wire[field] = value
    decodes_or_refuses(ShardResult, msgpack.packb(wire, use_bin_type=True))


def test_a_decision_with_a_map_field_that_is_not_a_map_is_refused() -> None:
    """Found by the atheris run (`benchmarks/fuzz.py messages`): an AttributeError escaped."""
    wire = msgpack.unpackb(a_result(), raw=False, strict_map_key=False)
    wire[3][0][6] = 7  # the decision's preemptible candidates: a map
    with pytest.raises(MalformedMessage):
        ShardResult.decode(msgpack.packb(wire, use_bin_type=True))
