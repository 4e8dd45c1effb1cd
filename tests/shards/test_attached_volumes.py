"""A node table's attached volumes, kept up as placements are assumed and forgotten and
the store's syncs come, agree with a count from scratch at every step."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from cluster.volumes.needs import Attachable
from shards.attached_volumes import AttachedVolumes

KEYS = ("attachable-volumes-csi-a", "attachable-volumes-csi-b")


def test_counts_and_rows_agree_with_a_count_from_scratch():
    rng = random.Random(5)
    volumes = [Attachable(KEYS[i % 2], f"v{i}") for i in range(6)]
    kept = AttachedVolumes()
    committed: dict[int, set[tuple[str, str]]] = {}
    assumed: dict[int, Counter[tuple[str, str]]] = {}
    placed: list[tuple[int, tuple[Attachable, ...]]] = []
    for _ in range(2000):
        row = rng.randrange(4)
        step = rng.random()
        if step < 0.4:
            chosen = tuple(rng.sample(volumes, rng.randint(1, 2)))
            kept.assume(row, chosen, 1)
            assumed.setdefault(row, Counter()).update((v.key, v.volume) for v in chosen)
            placed.append((row, chosen))
        elif step < 0.7 and placed:
            row, chosen = placed.pop(rng.randrange(len(placed)))
            kept.assume(row, chosen, -1)
            assumed[row].subtract((v.key, v.volume) for v in chosen)
        else:
            held = {(v.key, v.volume) for v in rng.sample(volumes, rng.randint(0, 3))}
            kept.set_committed(row, [(k, v, rng.randint(1, 3)) for k, v in held])
            committed[row] = held
        for key in KEYS:
            on = [committed.get(r, set()) | (+assumed.get(r, Counter())).keys() for r in range(4)]
            expected = [sum(k == key for k, _ in kvs) for kvs in on]
            assert kept.counts(key, np.arange(4)).tolist() == expected
        for v in volumes:
            on_rows = {r for r in range(4) if (v.key, v.volume) in committed.get(r, set())}
            on_rows |= {r for r in range(4) if assumed.get(r, Counter())[(v.key, v.volume)] > 0}
            assert kept.rows_with(v.volume) == on_rows
