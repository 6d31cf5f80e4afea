"""Kubernetes name, label and annotation syntax, with apimachinery's exact messages.

The one implementation of these rules in the provider. Each `is_*` function returns
the list of problems (empty when valid), worded like `k8s.io/apimachinery/pkg/util/validation`,
so callers can wrap them in FieldErrors at the right path the way Kubernetes does.
Patterns must match the whole value, as Go's anchored regexps do (a trailing newline fails).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from airflow_broadcast.specs.field_errors import FieldError, invalid, too_long

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

DNS1123_LABEL_MAX = 63
DNS1035_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
PORT_NAME_MAX = 15
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
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


@lru_cache(maxsize=64)
def _pattern(fmt: str) -> re.Pattern[str]:
    return re.compile(fmt)


def _matches(fmt: str, value: str) -> bool:
    """Go's `regexp.MustCompile("^" + fmt + "$").MatchString`: the whole value, nothing after it."""
    return _pattern(fmt).fullmatch(value) is not None


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


def regex_errors(value: str, fmt: str, message: str, *examples: str) -> list[str]:
    """[RegexError] when `value` does not match `fmt` as a whole, else []; for kind-specific name rules."""
    return [] if _matches(fmt, value) else [regex_error(message, fmt, *examples)]


def _length_and_format(value: str, max_length: int, fmt: str, message: str, *examples: str) -> list[str]:
    """The shape of most apimachinery checks: the length error first, then the format error."""
    errors = [max_len_error(max_length)] if len(value) > max_length else []
    return errors + regex_errors(value, fmt, message, *examples)


_DNS1123_LABEL_FORMAT_ERROR = regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc")


def is_dns1123_label(value: str) -> list[str]:
    errors = [max_len_error(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    if not _matches(DNS1123_LABEL_FMT, value):
        dotted = _matches(DNS1123_SUBDOMAIN_FMT, value)
        errors.append("must not contain dots" if dotted else _DNS1123_LABEL_FORMAT_ERROR)
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    return _length_and_format(value, DNS1123_SUBDOMAIN_MAX, DNS1123_SUBDOMAIN_FMT, _DNS1123_SUBDOMAIN_MSG,
                              "example.com")


def is_dns1035_label(value: str) -> list[str]:
    """Names that must start with a letter (Services, and so TFJobs, whose children they name)."""
    return _length_and_format(value, DNS1035_LABEL_MAX, DNS1035_LABEL_FMT, _DNS1035_LABEL_MSG, "my-name", "abc-123")


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
    if not _matches(QUALIFIED_NAME_FMT, name):
        errors.append("name part " + _qualified_name_regex_error())
    return errors


def is_valid_label_value(value: str) -> list[str]:
    return _length_and_format(value, LABEL_VALUE_MAX, LABEL_VALUE_FMT, _LABEL_VALUE_MSG,
                              "MyValue", "my_value", "12345")


def is_valid_port_name(value: str) -> list[str]:
    """IANA_SVC_NAME: at most 15 lower-case alphanumerics or '-', with a letter, no '--'."""
    errors = []
    if len(value) > PORT_NAME_MAX:
        errors.append(max_len_error(PORT_NAME_MAX))
    if not _matches("[-a-z0-9]+", value):
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
    errors = regex_errors(value, ENV_VAR_NAME_FMT, _ENV_VAR_NAME_MSG, "my.env-name", "MY_ENV.NAME", "MyEnvName1")
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


def _string_map(value: Any, path: str, errors: list[FieldError]) -> Mapping[Any, Any]:
    """The map to check entry by entry; {} when absent, or when it is no map (reported)."""
    if value is not None and not isinstance(value, Mapping):
        errors.append(invalid(path, value, "must be a map of string keys to string values"))
    return value if isinstance(value, Mapping) else {}


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """Label keys must be qualified names and values valid label values (errors at the map's path)."""
    errors: list[FieldError] = []
    for key, value in _string_map(labels, path, errors).items():
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
    errors: list[FieldError] = []
    size = 0
    for key, value in _string_map(annotations, path, errors).items():
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
