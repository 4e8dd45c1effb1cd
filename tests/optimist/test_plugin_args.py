"""Arguments of optimist's own plugins, checked by the configuration loader against the
real registry (test_configuration.py fixes the registry; these need the plugins)."""

import pytest

from optimist.configuration import ConfigError, parse_configuration


def test_gpu_placement_s_args_are_checked_naming_the_field():
    text = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: gpus
    plugins:
      multiPoint:
        enabled: [{name: GPUPlacement}]
    pluginConfig:
      - name: GPUPlacement
        args: {policy: %s}
"""
    config = parse_configuration(text % "best-fit")
    assert config.profiles[0].args["GPUPlacement"]["policy"] == "best-fit"
    with pytest.raises(ConfigError, match="policy") as err:
        parse_configuration(text % "tightest")
    assert "fgd" in str(err.value) and "tightest" in str(err.value)
