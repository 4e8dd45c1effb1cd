"""The documents' identity: the apiVersion and kind of each, and upstream's profile name."""

from typing import Final

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
OPTIMIST_API_VERSION: Final = "optimist.io/v1alpha1"
OPTIMIST_KIND: Final = "OptimistConfiguration"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
