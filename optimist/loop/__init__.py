"""The control loop, in rooms of its own: `cycle` feeds the shards and settles their
answers; `ingest` turns cluster events into queue and store changes; `commits`
routes placements to a binder; `recovery` survives the store; `eviction` and
`reservation_desk` carry out what preemption and reservations ask of the store and
the cluster."""

from optimist.loop.cycle import SchedulingLoop

__all__ = ["SchedulingLoop"]
