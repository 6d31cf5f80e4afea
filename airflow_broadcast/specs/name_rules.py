"""Kubernetes name, label and annotation syntax, with apimachinery's exact messages.

Each `is_*` function returns the list of problems (empty when valid), worded like
`k8s.io/apimachinery/pkg/util/validation`, so callers can wrap them in FieldErrors
at the right path the way Kubernetes does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, invalid, too_long

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
PORT_NAME_MAX = 15
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_ENV_VAR_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit"
)


def _full(fmt: str) -> re.Pattern[str]:
    return re.compile("^" + fmt + "$")


_DNS1123_LABEL_RE = _full(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = _full(DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_RE = _full(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = _full(LABEL_VALUE_FMT)
_ENV_VAR_NAME_RE = _full(ENV_VAR_NAME_FMT)
_PORT_NAME_CHARSET_RE = re.compile(r"^[-a-z0-9]+$")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError, including its `'a',  or 'b'` double space."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {listed}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def inclusive_range_error(low: int, high: int) -> str:
    return f"must be between {low} and {high}, inclusive"


def empty_error() -> str:
    return "must be non-empty"


def is_dns1123_label(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL_RE.match(value):
        if _DNS1123_SUBDOMAIN_RE.match(value):
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def _qualified_name_regex_error() -> str:
    return regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")


def is_qualified_name(value: str) -> list[str]:
    """`[prefix/]name`: what label keys, annotation keys and toleration keys must be."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part " + empty_error())
        else:
            errors.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _qualified_name_regex_error()
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part " + empty_error())
    elif len(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME_RE.match(name):
        errors.append("name part " + _qualified_name_regex_error())
    return errors


def is_valid_label_value(value: str) -> list[str]:
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.match(value):
        errors.append(regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def is_valid_port_name(value: str) -> list[str]:
    """IANA_SVC_NAME: at most 15 lower-case alphanumerics or '-', with a letter, no '--'."""
    errors = []
    if len(value) > PORT_NAME_MAX:
        errors.append(max_len_error(PORT_NAME_MAX))
    if not _PORT_NAME_CHARSET_RE.match(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_env_var_name(value: str) -> list[str]:
    errors = []
    if not _ENV_VAR_NAME_RE.match(value):
        examples = ("my.env-name", "MY_ENV.NAME", "MyEnvName1")
        errors.append(regex_error(_ENV_VAR_NAME_MSG, ENV_VAR_NAME_FMT, *examples))
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def validate_dns1123_label(value: str, path: str) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_dns1123_label(value)]


def validate_dns1123_subdomain(value: str, path: str) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """Label keys must be qualified names and values valid label values (errors at the map's path)."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [invalid(path, labels, "must be a map of string keys to string values")]
    errors: list[FieldError] = []
    for key, value in labels.items():
        if not isinstance(key, str):
            errors.append(invalid(path, key, "label keys must be strings"))
        else:
            errors.extend(invalid(path, key, msg) for msg in is_qualified_name(key))
        if not isinstance(value, str):
            errors.append(invalid(path, value, "label values must be strings"))
        else:
            errors.extend(invalid(path, value, msg) for msg in is_valid_label_value(value))
    return errors


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    """Annotation keys are qualified names ignoring case; the total size is capped at 256 KiB."""
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [invalid(path, annotations, "must be a map of string keys to string values")]
    errors: list[FieldError] = []
    size = 0
    for key, value in annotations.items():
        if not isinstance(key, str):
            errors.append(invalid(path, key, "annotation keys must be strings"))
            continue
        errors.extend(invalid(path, key, msg) for msg in is_qualified_name(key.lower()))
        if not isinstance(value, str):
            errors.append(invalid(path, value, "annotation values must be strings"))
            continue
        size += len(key.encode()) + len(value.encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(too_long(path, "", TOTAL_ANNOTATION_SIZE_LIMIT))
    return errors
