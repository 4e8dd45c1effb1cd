"""Fences that keep the cross-pod re-check exact when several binders commit.

The driver's binder re-checks PodTopologySpread and InterPodAffinity against
its view of the committed pods (crosspod_guard.py). Binder actors commit
batches that need no such check, and they do not see that view. Two races
remain, and each has a counter in the store that the commit script checks
in the same atomic step as the commit:

- An actor commits pods that a unit just checked by the driver counts (pods
  matching its spreading or affinity selectors). The actor bumps a fence per
  namespace it commits in; the driver reads the fences of the namespaces a
  unit's rules look at *before* syncing its view, and the unit's commit is a
  conflict if any of them moved since.
- A pod with required anti-affinity is committed (always by the driver: it
  needs the check), keeping away pods that were already routed to an actor
  as needing none. The store counts the distinct keep-away peers ever
  committed; an actor's batch carries the count its routing knew, and is a
  conflict if the count moved since.

Either conflict sends the unit back to the queue, as any other conflict.
With one binder there is nothing to fence and no fence is read or written.
"""

from __future__ import annotations

from cluster.objects import SchedulingSpec

ANY_NAMESPACE = "*"  # the fence every actor commit bumps, for rules that select namespaces


def namespaces_watched(spec: SchedulingSpec) -> set[str]:
    """The namespaces whose new pods could change the verdict of the pod's required rules.

    Spreading counts pods of the pod's own namespace; an affinity term names
    its namespaces, or selects them by label (any namespace, then).
    """
    watched = {spec.namespace}
    for term in (*spec.affinity_required, *spec.anti_affinity_required):
        if term.namespace_selector is not None:
            watched.add(ANY_NAMESPACE)
        watched.update(term.namespaces)
    return watched
