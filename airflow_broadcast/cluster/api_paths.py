"""Every Kubernetes API path the provider requests, built from checked segments.

Names reach paths from places an attacker may write: a job record's status (pod names of
failed nodes), a sensor's templated `job_name`, a namespace. A segment like `..` or one with
`/` or `?` would make the API server serve another object (`../../secrets/x`) with the
provider's credentials. So each segment must be what Kubernetes itself allows (namespaces
are DNS-1123 labels, object names DNS-1123 subdomains), else InvalidApiPath is raised before
any request; valid segments are also percent-quoted, as a second line of defence.
"""

from __future__ import annotations

from urllib.parse import quote

from airflow_broadcast.specs.name_rules import is_dns1123_label, is_dns1123_subdomain


class InvalidApiPath(ValueError):
    """A namespace, name or API version that no Kubernetes object can have; nothing was requested."""

    def __init__(self, what: str, value: object, problems: list[str]) -> None:
        self.what, self.value, self.problems = what, value, tuple(problems)
        super().__init__(f"refused to request the Kubernetes API with the invalid {what} {value!r}: "
                         + "; ".join(problems))


def _checked(value: object, what: str, rule: str) -> str:
    if not isinstance(value, str):
        raise InvalidApiPath(what, value, [f"must be a string, not {type(value).__name__}"])
    problems = is_dns1123_label(value) if rule == "label" else is_dns1123_subdomain(value)
    if problems:
        raise InvalidApiPath(what, value, problems)
    return quote(value, safe="")


def namespace_segment(namespace: object) -> str:
    """The namespace as a path segment: a DNS-1123 label, or InvalidApiPath."""
    return _checked(namespace, "namespace", "label")


def name_segment(name: object, plural: str = "objects") -> str:
    """An object name as a path segment: a DNS-1123 subdomain, or InvalidApiPath."""
    return _checked(name, f"name of {plural}", "subdomain")


def group_version_root(api_version: str) -> str:
    """`/api/v1` for the core group, else `/apis/<group>/<version>` with both parts checked."""
    if api_version == "v1":
        return "/api/v1"
    group, _, version = api_version.partition("/")
    return f"/apis/{_checked(group, 'API group', 'subdomain')}/{_checked(version, 'API version', 'label')}"


def api_path(api_version: str, plural: str, *, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
    """The path of a collection (no `name`), an object, or an object's subresource (e.g. `log`)."""
    path = group_version_root(api_version)
    if namespace is not None:
        path += f"/namespaces/{namespace_segment(namespace)}"
    path += f"/{_checked(plural, 'resource', 'label')}"
    if name is not None:
        path += f"/{name_segment(name, plural)}"
    elif subresource is not None:
        raise InvalidApiPath("subresource", subresource, ["needs an object name"])
    if subresource is not None:
        path += f"/{_checked(subresource, 'subresource', 'label')}"
    return path


def request_route(verb: str, path: str) -> str:
    """`VERB resource[/subresource]` of a request, without its namespace and name: what request counts key on.

    A GET of a collection is a LIST, so `LIST pods`, `GET configmaps`, `WATCH nodes`, `PUT configmaps`.
    """
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    resource = parts[:1] in (["api"], ["apis"])
    parts = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else parts
    if parts[:1] == ["namespaces"] and len(parts) > 2:
        parts = parts[2:]
    if not parts:
        return f"{verb} -"
    if verb == "GET" and resource and len(parts) == 1:
        verb = "LIST"
    return f"{verb} {parts[0]}" + (f"/{parts[2]}" if len(parts) > 2 else "")
