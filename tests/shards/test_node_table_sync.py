"""A shard's sync against a store that Redis loses between its reads."""

from __future__ import annotations

import pytest

from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement
from cluster.store import Delta, EpochChanged, NodeStore
from shards.node_table import NodeTable
from shards.testing import node, pod_spec

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
