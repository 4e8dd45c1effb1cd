"""`optimist run`: the scheduler on a live cluster, until SIGTERM."""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import ray
import typer

from optimist.cli.shared_options import (
    ShardResources,
    load_or_exit,
    refuse,
    resources_or_exit,
    usage_error,
)
from optimist.explain import Explainer
from optimist.kube.client import KubeClient
from optimist.kube.lease import LeaseConfig
from optimist.lifetime import interrupts
from optimist.metrics.definitions import SchedulerMetrics
from optimist.metrics.server import MetricsServer
from optimist.profiling import Profiler
from optimist.runtime import init_ray
from optimist.service import Service
from optimist.settings import Settings

log = logging.getLogger("optimist")


def run(
    config: Annotated[
        Path,
        typer.Option(
            dir_okay=False,
            help="KubeSchedulerConfiguration file, with an optional OptimistConfiguration "
            "document: the profiles to take over, leaderElection, clientConnection",
        ),
    ],
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            dir_okay=False,
            help="kubeconfig file [default: clientConnection.kubeconfig, else in-cluster]",
        ),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option(help="the node store: redis://, rediss:// or unix:// (shared by replicas)"),
    ] = None,
    ray_address: Annotated[str | None, typer.Option(help="join this Ray cluster")] = None,
    shards: Annotated[int | None, typer.Option(min=1, help="scheduler shards")] = None,
    shard_resource: ShardResources = None,
    metrics_address: Annotated[
        str | None,
        typer.Option(
            help="serve /metrics, /healthz and /readyz on HOST:PORT [default: the "
            "configuration's metricsAddress, else 127.0.0.1:10259]"
        ),
    ] = None,
    identity: Annotated[
        str | None, typer.Option(help="this replica's name in the lease [default: host_pid]")
    ] = None,
    profiling_endpoint: Annotated[
        bool, typer.Option(help="serve /debug/profile too, to loopback clients only")
    ] = False,
) -> None:
    """Schedule the pods of the configured profiles on a live cluster, until SIGTERM.

    With leaderElection.leaderElect (the default), replicas share a Lease: one schedules,
    the others wait to take over."""
    configuration = load_or_exit(config)
    election = configuration.leader_election
    if election.leader_elect and election.resource_name == "kube-scheduler":
        refuse(
            "leaderElection.resourceName: 'kube-scheduler' is kube-scheduler's own "
            "lease; give optimist a lease of its own (resourceName: optimist)"
        )
    with usage_error(ValueError):
        settings = Settings.from_configuration(
            configuration, shards=shards, redis_url=redis_url, ray_address=ray_address
        )
    if shard_resource:
        settings = replace(settings, shard_resources=resources_or_exit(shard_resource))
    connection = configuration.client_connection
    client = KubeClient.for_kubeconfig(
        str(kubeconfig or "") or connection.kubeconfig or None,
        qps=connection.qps,
        burst=connection.burst,
    )
    lease = (
        LeaseConfig(
            namespace=election.resource_namespace,
            name=election.resource_name,
            lease_duration_s=election.lease_duration.seconds,
            renew_deadline_s=election.renew_deadline.seconds,
            retry_period_s=election.retry_period.seconds,
        )
        if election.leader_elect
        else None
    )
    address = metrics_address or configuration.optimist.metrics_address or "127.0.0.1:10259"
    metrics = SchedulerMetrics()
    profiler = Profiler() if profiling_endpoint else None
    explainer = Explainer(settings.scheduler_names)
    service = Service(
        settings,
        client,
        identity or f"{socket.gethostname()}_{os.getpid()}",
        lease=lease,
        metrics=metrics,
        profiler=profiler,
        explainer=explainer,
    )
    # the port is taken before Ray starts: Ray's processes take ports of their own, and
    # a port in use fails here, at once, not after Ray is up
    server = MetricsServer(
        metrics, address, ready=service.ready.is_set, profiler=profiler, explainer=explainer
    )
    own_ray = init_ray(settings.ray_address)
    stop = threading.Event()
    with server, interrupts(lambda _: stop.set()):
        log.info("serving metrics on http://%s/metrics", server.address)
        try:
            service.run(stop)
        finally:
            if own_ray:
                ray.shutdown()
