"""An extender's settings (kube-scheduler's `extenders[]`), typed as upstream's v1 Extender.

The loader reads them from the file with upstream's checks; they travel to the
shards in their wire form, where `HTTPExtender` is built from them.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from cluster.config_types import Finding, Int64, Items, QualifiedName, WireModel
from cluster.durations import GoDuration


def _base64(text: str) -> str:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("must be base64-encoded data") from None
    return text


Base64 = Annotated[str, AfterValidator(_base64)]


def _extended(name: str) -> str:
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        raise ValueError(
            "is an invalid extended resource name (expected domain/name outside kubernetes.io)"
        )
    return name


ExtendedResourceName = Annotated[QualifiedName, AfterValidator(_extended)]


class ExtenderTLSConfig(WireModel):
    """How the scheduler reaches an https extender."""

    insecure: bool = False
    """Do not verify the extender's certificate (refused together with a CA)."""
    server_name: str = ""
    """The name sent for SNI and checked against the certificate [default: the URL's host]."""
    cert_file: str = ""
    """A client certificate, PEM file."""
    key_file: str = ""
    """The client certificate's key, PEM file."""
    ca_file: str = ""
    """The CA that signs the extender's certificate, PEM file."""
    cert_data: Base64 = ""
    """A client certificate, PEM, base64-encoded (instead of certFile)."""
    key_data: Base64 = ""
    """The client certificate's key, PEM, base64-encoded (instead of keyFile)."""
    ca_data: Base64 = ""
    """The CA, PEM, base64-encoded (instead of caFile)."""


class ExtenderManagedResource(WireModel):
    """An extended resource the extender manages."""

    name: ExtendedResourceName
    """The resource, domain/name outside kubernetes.io."""
    ignored_by_scheduler: bool = False
    """Leave it out of NodeResourcesFit's check, in every profile."""


class ExtenderConfig(WireModel):
    """One extender: its URL, which verbs it serves, and how far it is trusted."""

    url_prefix: str = ""
    """The extender's URL; one without a scheme gets https when enableHTTPS is set."""
    filter_verb: str = ""
    """The path of its filter call; empty: it does not filter."""
    preempt_verb: str = ""
    """The path of its preempt call (not called by optimist)."""
    prioritize_verb: str = ""
    """The path of its prioritize call; empty: it does not score."""
    weight: Int64 = 0
    """The multiplier of its scores; required, positive, with prioritizeVerb."""
    bind_verb: str = ""
    """The path of its bind call (not called by optimist: the binder binds)."""
    enable_https: bool = Field(default=False, alias="enableHTTPS")
    """Call it over https."""
    tls_config: ExtenderTLSConfig | None = None
    """The TLS settings for https."""
    http_timeout: GoDuration = GoDuration("0s")
    """How long a call may take [0: upstream's 5s]."""
    node_cache_capable: bool = False
    """It keeps its own node cache: send node names, not nodes."""
    managed_resources: Items[ExtenderManagedResource] = ()
    """The resources it manages; with some, only pods asking for one are sent to it."""
    ignorable: bool = False
    """A failed call is skipped rather than failing the pod's cycle."""

    @model_validator(mode="after")
    def _weighted(self) -> Self:
        if self.prioritize_verb and self.weight <= 0:
            raise Finding("must have a positive weight applied to it", ("weight",), self.weight)
        return self
