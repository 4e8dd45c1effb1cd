"""Reading kube-scheduler's own configuration file, so optimist runs the profiles a cluster has.

The file is a standard KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1),
read unchanged, optionally followed by a second YAML document of kind
OptimistConfiguration (optimist.io/v1alpha1) with optimist's own settings.
The loader behaves as kube-scheduler v1.30 does: the same defaults, the
same merging of a profile's plugins into the default multiPoint set and the
same expansion to extension points, the same validation rules, and strict
decoding (a field that is unknown, of the wrong type or given twice is an
error). Every error names the path in the file and the value found there.

Of the plugins a profile ends up with, the shards run the Filter and Score
plugins in optimist's registry; the queue sort belongs to the dispatcher and
the bind to the binder. Every other enabled plugin is reported as inactive,
with the reason, rather than dropped in silence.

One concept per module, as kube-scheduler's pkg/scheduler/apis/config: kinds
(the documents' identity), model (the loader's result), scheduler_configuration,
component and options (the documents' typed sections), model_reader (a section
read into its model, errors at their YAML path), fields (ConfigError and the
readers of what is not a model: the profiles' plugin sets), plugins (plugin sets,
active or not), arg_readers (each plugin's args model), profiles, and loader
(which ties them).
"""

from optimist.configuration.arg_readers import ARG_MODELS
from optimist.configuration.component import ClientConnection, LeaderElection
from optimist.configuration.fields import MISSING, ConfigError
from optimist.configuration.kinds import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    OPTIMIST_API_VERSION,
    OPTIMIST_KIND,
)
from optimist.configuration.loader import default_configuration, load_file, parse_configuration
from optimist.configuration.model import Configuration, ExpandedProfile, InactivePlugin
from optimist.configuration.options import OptimistOptions
from optimist.configuration.plugins import (
    DEFAULT_MULTI_POINT,
    HANDLED_OUTSIDE_SHARDS,
    POINTS,
    REASON_DRA,
    REASON_IN_TREE_LIMITS,
    REASON_MISSING,
    REASON_VOLUME_CAPACITY,
    UPSTREAM_PLUGINS,
)
from optimist.configuration.scheduler_configuration import KubeSchedulerConfiguration

__all__ = [
    "API_VERSION",
    "ARG_MODELS",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "HANDLED_OUTSIDE_SHARDS",
    "KIND",
    "MISSING",
    "OPTIMIST_API_VERSION",
    "OPTIMIST_KIND",
    "POINTS",
    "REASON_DRA",
    "REASON_IN_TREE_LIMITS",
    "REASON_MISSING",
    "REASON_VOLUME_CAPACITY",
    "UPSTREAM_PLUGINS",
    "ClientConnection",
    "ConfigError",
    "Configuration",
    "ExpandedProfile",
    "InactivePlugin",
    "KubeSchedulerConfiguration",
    "LeaderElection",
    "OptimistOptions",
    "default_configuration",
    "load_file",
    "parse_configuration",
]
