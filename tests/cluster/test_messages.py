"""ShardResult on the wire: every field survives the trip; a frame of another shape is refused."""

import msgpack
import pytest

from cluster.messages import (
    Decision,
    MalformedMessage,
    PodPlacement,
    ShardBatch,
    ShardResult,
    UnitRequest,
)
from tests.cluster.test_node_store import spec


def result() -> ShardResult:
    placed = Decision("ns/u0", [PodPlacement("ns/p0", 0, ["n1", "n2"], [4, 4])])
    refused = Decision("ns/u1", [], {"Insufficient cpu": 3}, 3, preemptible={0: ["n1", "n3"]})
    return ShardResult(
        2,
        7,
        4,
        [placed, refused],
        0.125,
        0.5,
        extender_errors=1,
        rollbacks=3,
        round_trips=2,
        versions_behind=5,
        synced_from_log=True,
        observed=[[[["Filter", "Success", "p"], [0, 2, 0], 0.25]], []],
        epoch="5e1f0c2a9b3d4e6f",
    )


def test_shard_result_round_trips_with_its_rollbacks_and_round_trips():
    assert ShardResult.decode(result().encode()) == result()


@pytest.mark.parametrize("change", [lambda w: w[:-1], lambda w: [*w, 0]])
def test_a_frame_of_another_shape_is_malformed(change):
    wire = msgpack.unpackb(result().encode(), raw=False, strict_map_key=False)
    with pytest.raises(MalformedMessage, match="expected 13"):
        ShardResult.decode(msgpack.packb(change(wire), use_bin_type=True))


def test_shard_batch_round_trips_with_preemption_and_nominations():
    units = [
        UnitRequest("ns/a", [("ns/a", 0)], 1, [], True, ["n2"]),
        UnitRequest("ns/b", [("ns/b", 0)]),
    ]
    batch = ShardBatch(3, [spec()], units, [1, 2])
    assert ShardBatch.decode(batch.encode()) == batch
