"""ShardResult's msgpack form: every field survives the trip, and an older frame still reads."""

import msgpack
import pytest

from cluster.messages import Decision, MalformedMessage, PodPlacement, ShardResult


def result() -> ShardResult:
    placed = Decision("ns/u0", [PodPlacement("ns/p0", 0, ["n1", "n2"], [4, 4])])
    refused = Decision("ns/u1", [], {"Insufficient cpu": 3}, 3)
    return ShardResult(2, 7, 4, [placed, refused], 0.125, 0.5, extender_errors=1, rollbacks=3)


def test_shard_result_round_trips_with_its_rollbacks():
    assert ShardResult.decode(result().encode()) == result()


def test_a_frame_without_rollbacks_reads_as_none():
    wire = msgpack.unpackb(result().encode(), raw=False, strict_map_key=False)
    old = ShardResult.decode(msgpack.packb(wire[:-1], use_bin_type=True))
    assert old.rollbacks == 0 and old.extender_errors == 1 and old.decide_s == 0.5


def test_a_frame_with_a_field_too_many_is_malformed():
    wire = msgpack.unpackb(result().encode(), raw=False, strict_map_key=False)
    with pytest.raises(MalformedMessage, match="9 fields"):
        ShardResult.decode(msgpack.packb([*wire, 0], use_bin_type=True))
