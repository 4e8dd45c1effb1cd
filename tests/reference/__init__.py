"""Plain, per-node references of kube-scheduler v1.30's plugins, for parity tests.

Written from upstream's semantics one node at a time, with Python ints and
floats and no numpy, sharing no code with the vectorized plugins (not even
the object model's matching helpers), so that agreement between the two
means something.
"""

from tests.reference.plugins import REFERENCES, Cluster, ReferencePlugin
from tests.reference.profile import profile_scores

__all__ = ["REFERENCES", "Cluster", "ReferencePlugin", "profile_scores"]
