"""Client configuration from a cncf `kubernetes` connection, read through its documented extras only.

The extras are the cncf provider's public contract (`in_cluster`, `kube_config_path`, `kube_config`,
`cluster_context`, `namespace`, `disable_verify_ssl`; each may carry the legacy `extra__kubernetes__`
prefix); loading uses kubernetes_asyncio's public loaders, so nothing depends on the cncf hook's internals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import yaml
from kubernetes_asyncio import config as async_config

LEGACY_PREFIX = "extra__kubernetes__"
DEFAULT_NAMESPACE = "default"


class CredentialLoader(Protocol):
    """What kubernetes_asyncio's kubeconfig loaders return: reloads credentials into a configuration."""

    async def load_and_set(self, client_configuration: Any) -> None: ...


def extra_field(extras: Mapping[str, Any], name: str) -> Any:
    """An extra by its documented name, else by its legacy prefixed name (as the cncf hook reads it)."""
    if name in extras:
        return extras[name]
    return extras.get(f"{LEGACY_PREFIX}{name}")


def truthy(value: Any) -> bool:
    """Extras hold booleans as JSON booleans or as text ("true", "1", "yes")."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes") if value is not None else False


def namespace_of(extras: Mapping[str, Any]) -> str:
    namespace = extra_field(extras, "namespace")
    return str(namespace) if namespace else DEFAULT_NAMESPACE


@dataclass(frozen=True)
class ConnectionConfig:
    """Where a connection's credentials come from; at most one of in_cluster, kube_config_path, kube_config."""

    in_cluster: bool = False
    kube_config_path: str | None = None
    kube_config: Mapping[str, Any] | None = None
    cluster_context: str | None = None
    disable_verify_ssl: bool = False

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any], cluster_context: str | None = None) -> ConnectionConfig:
        """The task's `cluster_context` overrides the connection's; more than one source is refused."""
        in_cluster = truthy(extra_field(extras, "in_cluster"))
        path = extra_field(extras, "kube_config_path") or None
        inline = extra_field(extras, "kube_config") or None
        if sum(1 for source in (in_cluster, path, inline) if source) > 1:
            raise ValueError("Invalid kubernetes connection: the extras in_cluster, kube_config_path and "
                             "kube_config are mutually exclusive; set one of them")
        return cls(in_cluster=in_cluster, kube_config_path=str(path) if path else None,
                   kube_config=_kubeconfig_dict(inline) if inline else None,
                   cluster_context=cluster_context or extra_field(extras, "cluster_context") or None,
                   disable_verify_ssl=truthy(extra_field(extras, "disable_verify_ssl")))

    async def load(self, configuration: Any) -> CredentialLoader | None:
        """Fill `configuration`; the kubeconfig loader is returned to reload expiring credentials with.

        In-cluster configuration returns None: kubernetes_asyncio re-reads the rotating service-account
        token itself.
        """
        loader: CredentialLoader | None = None
        if self.in_cluster:
            async_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        elif self.kube_config is not None:
            loader = await async_config.load_kube_config_from_dict(
                dict(self.kube_config), context=self.cluster_context, client_configuration=configuration)
        else:  # kube_config_path, else $KUBECONFIG, else ~/.kube/config
            loader = await async_config.load_kube_config(
                config_file=self.kube_config_path, context=self.cluster_context, client_configuration=configuration)
        self.apply_overrides(configuration)
        return loader

    def apply_overrides(self, configuration: Any) -> None:
        """What the connection changes on top of the kubeconfig (loading again resets it)."""
        if self.disable_verify_ssl:
            configuration.verify_ssl = False


def _kubeconfig_dict(value: Any) -> Mapping[str, Any]:
    """The `kube_config` extra: a mapping, or its JSON or YAML text."""
    try:
        parsed = yaml.safe_load(value) if isinstance(value, str) else value
    except yaml.YAMLError as exc:
        # The parser's message quotes the offending line, which may hold a token: say only where it is.
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"Invalid kubernetes connection: the kube_config extra is not valid YAML{where} "
                         f"({getattr(exc, 'problem', None) or type(exc).__name__})") from None
    if not isinstance(parsed, Mapping):
        raise ValueError("Invalid kubernetes connection: the kube_config extra is not a kubeconfig "
                         "(expected a JSON or YAML mapping)")
    return parsed
