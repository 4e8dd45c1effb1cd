"""DefaultPreemptionArgs: how many nodes a preemption's dry run looks at, at least."""

from __future__ import annotations

from typing import Annotated

from pydantic import ValidationInfo, field_validator

from cluster.config_types import Int32, PluginArgs, in_range


class DefaultPreemptionArgs(PluginArgs):
    min_candidate_nodes_percentage: Annotated[Int32, in_range(0, 100)] = 10
    """The share of the nodes a preemptor could go to that its dry run tries, at least."""
    min_candidate_nodes_absolute: Annotated[Int32, in_range(0)] = 100
    """The nodes a dry run tries, at least, whatever the share says."""

    @field_validator("min_candidate_nodes_absolute")
    @classmethod
    def _not_both_zero(cls, absolute: int, info: ValidationInfo) -> int:
        if absolute == 0 and info.data.get("min_candidate_nodes_percentage") == 0:
            raise ValueError("cannot be zero at the same time as minCandidateNodesPercentage")
        return absolute
