"""Every frame between processes on the wire: each field survives the trip, and a frame
that is cut short, of another shape or with a value of the wrong type is refused with
MalformedMessage, which names the message and the field at fault."""

import dataclasses
from typing import Any

import msgpack
import pytest

from cluster.explanation import (
    ExplainRequest,
    FilterVerdict,
    NodeColumns,
    PodExplanation,
    ScorerColumn,
    UnitExplanation,
)
from cluster.messages import (
    CommitReply,
    CommitRequest,
    Conflict,
    Decision,
    PodPlacement,
    ShardBatch,
    ShardResult,
    Status,
    UnitOutcome,
    UnitRequest,
)
from cluster.wire import MalformedMessage, Wire
from tests.cluster.test_node_store import spec


def placed() -> Decision:
    return Decision("ns/u0", [PodPlacement("ns/p0", 0, ["n1", "n2"], [4, 4], [1, 3])])


def refused() -> Decision:
    return Decision(
        "ns/u1",
        [],
        {"Insufficient cpu": 3},
        3,
        ["NodeResourcesFit"],
        ["NodeAdd", "AssignedPodDelete"],
        preemptible={0: ["n1", "n3"]},
    )


def explained() -> UnitExplanation:
    ranked = NodeColumns(
        ["n1", "n2"], [180, -1], [True, False], [[False, True]], [[40, 0]], [[90, 0]]
    )
    pod = PodExplanation(
        "ns/p0",
        "default-scheduler",
        2,
        1,
        [FilterVerdict("NodeResourcesFit", 1, 1, {"Insufficient cpu": 1})],
        "",
        [ScorerColumn("NodeResourcesBalancedAllocation", 2, True)],
        1,
        "n1",
        "",
        180,
        ranked,
    )
    return UnitExplanation("ns/u0", 1, 12, 1, True, [pod], seconds=0.002)


def samples() -> list[Wire]:
    """One frame of each kind, every field set away from its default."""
    units = [
        UnitRequest("ns/a", [("ns/a", 0)], 1, [{"kind": "Pod"}], True, ["n2"]),
        UnitRequest("ns/b", [("ns/b0", 0), ("ns/b1", 1)], 2),
    ]
    outcomes = [
        UnitOutcome("ns/u0", Status.PARTLY_BOUND, ["n1", "n2"], "", ["ns/p1"], [[0], [1, 2]]),
        UnitOutcome.refused("ns/u1", Conflict.HOST_PORT, "port 80 is taken on n1"),
    ]
    return [
        ShardBatch(3, [spec(), spec("2")], units, [1, 2]),
        ShardResult(
            2,
            7,
            4,
            [placed(), refused()],
            0.125,
            0.5,
            extender_errors=1,
            rollbacks=3,
            round_trips=2,
            versions_behind=5,
            synced_from_log=True,
            observed=([(("Filter", "Success", "p"), [0, 2, 0], 0.25)], []),
            epoch="5e1f0c2a9b3d4e6f",
        ),
        CommitRequest(4, [spec()], [placed()], "5e1f0c2a9b3d4e6f"),
        CommitReply(outcomes, 9),
        ExplainRequest("ns/u0", [spec()], [("ns/p0", 0), ("ns/p1", 0)], 2, ["n1", ""], 5),
        explained(),
    ]


KINDS = [type(message) for message in samples()]
by_kind = pytest.mark.parametrize("message", samples(), ids=lambda m: type(m).__name__)


def wire_of(message: Wire) -> list[Any]:
    """A frame as msgpack reads it back: what a forger starts from."""
    unpacked: list[Any] = msgpack.unpackb(message.encode(), raw=False, strict_map_key=False)
    return unpacked


def packed(wire: Any) -> bytes:
    return msgpack.packb(wire, use_bin_type=True)


@by_kind
def test_every_message_round_trips(message: Wire) -> None:
    assert type(message).decode(message.encode()) == message


@by_kind
def test_a_frame_cut_short_is_malformed(message: Wire) -> None:
    frame = message.encode()
    for cut in (0, 1, len(frame) // 2, len(frame) - 1):
        with pytest.raises(MalformedMessage, match=f"^{type(message).__name__}: "):
            type(message).decode(frame[:cut])


@by_kind
@pytest.mark.parametrize("change", [lambda w: w[:-1], lambda w: [*w, 0]], ids=["short", "long"])
def test_a_frame_with_another_field_count_is_malformed(message: Wire, change: Any) -> None:
    kind = type(message)
    count = len(wire_of(message))
    with pytest.raises(MalformedMessage, match=f"^{kind.__name__}: expected the {count} fields"):
        kind.decode(packed(change(wire_of(message))))


@by_kind
def test_a_field_of_the_wrong_type_is_malformed_and_named(message: Wire) -> None:
    """The first field of each message is a str or an int: a map in its place is refused,
    and the error says which field of which message."""
    kind = type(message)
    wire = wire_of(message)
    wire[0] = {"forged": True}
    first = dataclasses.fields(kind)[0].name
    with pytest.raises(MalformedMessage, match=rf"^{kind.__name__}\.{first}: expected"):
        kind.decode(packed(wire))


@by_kind
def test_a_frame_that_is_not_a_list_is_malformed(message: Wire) -> None:
    with pytest.raises(MalformedMessage, match=r"expected the \d+ fields of \w+, got a dict"):
        type(message).decode(packed({"not": "a message"}))


def test_the_error_names_the_path_to_a_value_deep_inside() -> None:
    result = samples()[1]
    wire = wire_of(result)
    wire[3][0][1][0][3][1] = "four"  # decisions[0].placements[0].versions[1]
    with pytest.raises(MalformedMessage) as refused_:
        ShardResult.decode(packed(wire))
    assert str(refused_.value) == (
        "ShardResult.decisions[0].placements[0].versions[1]: expected int, got str 'four'"
    )


def test_a_status_or_conflict_that_does_not_exist_is_malformed() -> None:
    reply = samples()[3]
    wire = wire_of(reply)
    wire[0][0][1] = "lost"
    with pytest.raises(MalformedMessage, match=r"outcomes\[0\]\.status: expected a Status"):
        CommitReply.decode(packed(wire))
    wire = wire_of(reply)
    wire[0][1][6] = "meteor"
    with pytest.raises(MalformedMessage, match=r"outcomes\[1\]\.conflict: expected a Conflict"):
        CommitReply.decode(packed(wire))


def test_a_map_with_a_key_that_cannot_be_one_is_malformed() -> None:
    """msgpack raises TypeError for an array used as a map key: refused, not raised."""
    with pytest.raises(MalformedMessage, match=r"^ShardBatch: unhashable"):
        ShardBatch.decode(b"\x81\x91\x01\x02")  # {[1]: 2}


def test_explanations_are_refused_where_a_node_column_is_forged() -> None:
    wire = wire_of(explained())
    wire[5][0][11][2] = [True, "yes"]  # pods[0].ranked.scored
    with pytest.raises(
        MalformedMessage, match=r"^UnitExplanation\.pods\[0\]\.ranked\.scored\[1\]: expected bool"
    ):
        UnitExplanation.decode(packed(wire))


def test_an_explain_request_with_a_pod_that_is_not_a_pair_is_refused() -> None:
    wire = wire_of(samples()[4])
    wire[2][1] = ["ns/p1"]
    with pytest.raises(MalformedMessage, match=r"^ExplainRequest\.pods\[1\]: expected 2 items"):
        ExplainRequest.decode(packed(wire))
