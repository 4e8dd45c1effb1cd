"""A shard's sync against a store that Redis loses between its reads."""

from __future__ import annotations

import numpy as np
import pytest

from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement
from cluster.objects import Peer
from cluster.store import Delta, EpochChanged, NodeStore
from shards.node_table import NodeTable
from shards.testing import hold_pods, node, pod_spec, table_of

COLUMNS = ["pods", "cpu", "memory"]


class _RebuiltAfterRead(NodeStore):
    """The store a shard reads, built again by the driver right after the shard's read
    of its changes, as after a Redis restart: the peer ids in that read then name
    peers of a store that is gone."""

    def __init__(self, driver: NodeStore) -> None:
        super().__init__(driver.client, driver.keys)
        self.driver = driver

    def changes_since(self, since: int, columns, awaited=()) -> Delta:
        delta = super().changes_since(since, columns, awaited)
        self.driver.rebuild([node("a")], {}, [])
        return delta


def test_a_store_built_again_between_a_sync_s_reads_is_an_epoch_change(store: NodeStore) -> None:
    store.put_nodes([node("a")])
    labelled = pod_spec({"cpu": "1"})
    labelled["metadata"]["labels"] = {"app": "web"}
    spec = pod_from_manifest(labelled).spec
    store.commit([spec], [Decision("u", [PodPlacement("default/p", 0, ["a"], [0])])])
    shard_store = _RebuiltAfterRead(store)
    table = NodeTable()
    # the shard starts over in the new epoch (shards/shard_actor.py), rather than fail on
    # a peer the new store never had (KeyError in NodeTable.apply)
    with pytest.raises(EpochChanged):
        table.sync(shard_store)
    assert table.peer_col == {} and table.size == 0  # nothing of the lost store applied


def test_the_sums_of_a_wide_peer_selection_follow_pods_and_a_growing_table():
    """`pods_of` keeps the per-row sums of a selection of many peer columns: they follow
    pods assumed, forgotten and synced, and a table that grew (a node, a peer) since."""
    table = table_of([node("a"), node("b")])
    peers = [Peer(f"ns{i}", (("app", "x"),)) for i in range(3)]
    cols = [table.peer_column(p.id, p) for p in peers]
    every = np.ones(len(table.peers), dtype=bool)  # all three: read as a kept sum
    hold_pods(table, "a", peers[0], 2)
    assert table.pods_of(every, slice(0, table.size)).tolist() == [2, 0]
    table.assume(1, np.zeros(0, np.int64), peer=cols[1])
    hold_pods(table, "b", peers[2], 1)
    assert table.pods_of(every, slice(0, table.size)).tolist() == [2, 2]
    table.forget(1, np.zeros(0, np.int64), peer=cols[1])
    assert table.pods_of(every, np.array([1])).tolist() == [1]
    grown = NodeTable(capacity=2)  # a table that must widen as nodes come
    grown.apply(Delta(1, [], np.zeros(0, np.int64), np.zeros((0, 0), np.int64), specs=[node("a")]))
    for peer in peers:
        grown.peer_column(peer.id, peer)
    wide = np.ones(len(grown.peers), dtype=bool)
    assert grown.pods_of(wide, slice(0, grown.size)).tolist() == [0]
    grown.apply(Delta(2, [], np.zeros(0, np.int64), np.zeros((0, 0), np.int64),
                      specs=[node("b"), node("c")]))  # fmt: skip
    grown.assume(grown.index["c"], np.zeros(0, np.int64), peer=0)  # into a row the sums lack
    assert grown.pods_of(wide, slice(0, grown.size)).tolist() == [0, 0, 1]
