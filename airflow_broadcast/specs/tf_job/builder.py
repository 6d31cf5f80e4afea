"""A TFJob from an image or a Python function, as the SDK's `TrainingClient.create_job` builds it (N2).

`kubeflow-training` 1.9 builds the job and creates it in one call; these functions return the
manifest instead, so it can be read, templated and handed to `TFJobOperator(manifest=...)`.
The shape is the SDK's: one `tensorflow` container in one pod template shared by Chief, PS and
Worker, `sidecar.istio.io/inject: "false"` on the template, an empty runPolicy, no restartPolicy.
Inputs the SDK would pass on to the apiserver unchecked are rejected here with a ValueError
naming the parameter; the result is then checked like any other manifest (`parse_tf_job`).
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_broadcast.specs.quantities import QuantityError, parse_quantity
from airflow_broadcast.specs.tf_job.parsing import parse_tf_job
from airflow_broadcast.specs.tf_job.spec import API_VERSION, CHIEF, CONTAINER_NAME, KIND, PS, WORKER

DEFAULT_BASE_IMAGE = "docker.io/tensorflow/tensorflow:2.9.1"
DEFAULT_GPU_BASE_IMAGE = f"{DEFAULT_BASE_IMAGE}-gpu"
DEFAULT_PIP_INDEX_URL = "https://pypi.org/simple"
ISTIO_SIDECAR_INJECTION = "sidecar.istio.io/inject"
GPU_RESOURCE = "nvidia.com/gpu"
RESOURCE_NAMES = {"cpu": "cpu", "memory": "memory", "gpu": GPU_RESOURCE}
SCRIPT_COMMAND = ("bash", "-c")
SCRIPT_FILE = "ephemeral_script.py"
ENV_VAR_KEYS = frozenset({"name", "value", "valueFrom"})

Quantity = str | int | float
EnvVars = Mapping[str, str] | Sequence[Mapping[str, Any]]


def tf_job_from_image(
    name: str, *, base_image: str | None = None, namespace: str | None = None, num_workers: int = 1,
    num_chief_replicas: int | None = None, num_ps_replicas: int | None = None,
    resources_per_worker: Mapping[str, Quantity] | None = None, env_vars: EnvVars | None = None,
    volumes: Sequence[Mapping[str, Any]] | None = None, volume_mounts: Sequence[Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
    command: Sequence[str] | None = None, args: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A TFJob running `base_image` in every replica; without `command`/`args` the image's own entrypoint runs."""
    return _tf_job(name, base_image, _strings(command, "command"), _strings(args, "args"), namespace=namespace,
                   num_workers=num_workers, num_chief_replicas=num_chief_replicas, num_ps_replicas=num_ps_replicas,
                   resources_per_worker=resources_per_worker, env_vars=env_vars, volumes=volumes,
                   volume_mounts=volume_mounts, labels=labels, annotations=annotations)


def tf_job_from_callable(
    name: str, train_func: Callable[..., object], *, parameters: Mapping[str, Any] | None = None,
    packages_to_install: Sequence[str] | None = None, pip_index_url: str = DEFAULT_PIP_INDEX_URL,
    base_image: str | None = None, namespace: str | None = None, num_workers: int = 1,
    num_chief_replicas: int | None = None, num_ps_replicas: int | None = None,
    resources_per_worker: Mapping[str, Quantity] | None = None, env_vars: EnvVars | None = None,
    volumes: Sequence[Mapping[str, Any]] | None = None, volume_mounts: Sequence[Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A TFJob whose replicas run `train_func` (see `train_script`) in `base_image`, which must have bash."""
    script = train_script(train_func, parameters, packages_to_install, pip_index_url)
    return _tf_job(name, base_image, list(SCRIPT_COMMAND), [script], namespace=namespace,
                   num_workers=num_workers, num_chief_replicas=num_chief_replicas, num_ps_replicas=num_ps_replicas,
                   resources_per_worker=resources_per_worker, env_vars=env_vars, volumes=volumes,
                   volume_mounts=volume_mounts, labels=labels, annotations=annotations)


def train_script(train_func: Callable[..., object], parameters: Mapping[str, Any] | None = None,
                 packages_to_install: Sequence[str] | None = None,
                 pip_index_url: str = DEFAULT_PIP_INDEX_URL) -> str:
    """The `bash -c` script: optional pip install, the function's source written to a file, `python -u` on it.

    As in the SDK, `parameters` reaches the function as ONE positional dict, `train_func(parameters)`,
    and without it the function is called with no arguments. Unlike the SDK, the heredoc delimiter is
    quoted, so `$`, backticks and backslashes in the source reach Python unchanged, and annotations are
    not evaluated, so a typed function needs no imports for the names in its signature.
    """
    source = _function_source(train_func)
    call = f"{train_func.__name__}({'' if parameters is None else _literal(parameters)})"
    code = f"from __future__ import annotations\n\n{source}\n{call}\n"
    delimiter = "EOM"
    while delimiter in code.splitlines():
        delimiter += "_"
    script = (f"program_path=$(mktemp -d)\n"
              f"read -r -d '' SCRIPT << '{delimiter}'\n{code}{delimiter}\n"
              f'printf "%s" "$SCRIPT" > "$program_path/{SCRIPT_FILE}"\n'
              f'python -u "$program_path/{SCRIPT_FILE}"\n')
    packages = _strings(packages_to_install, "packages_to_install") or []
    if not packages:
        return script
    if not isinstance(pip_index_url, str) or not pip_index_url:
        raise ValueError(f"pip_index_url must be a non-empty string, got {pip_index_url!r}")
    install = textwrap.dedent(f"""\
        if ! [ -x "$(command -v pip)" ]; then
            python -m ensurepip || python -m ensurepip --user || apt-get install python-pip
        fi

        PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install --quiet \\
        --no-warn-script-location --index-url {_quote(pip_index_url)} {" ".join(_quote(p) for p in packages)}
        """)
    return install + script


def _tf_job(name: str, base_image: str | None, command: list[str] | None, args: list[str] | None, *,
            namespace: str | None, num_workers: int, num_chief_replicas: int | None, num_ps_replicas: int | None,
            resources_per_worker: Mapping[str, Quantity] | None, env_vars: EnvVars | None,
            volumes: Sequence[Mapping[str, Any]] | None, volume_mounts: Sequence[Mapping[str, Any]] | None,
            labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise ValueError("name must be set to build a TFJob from an image or a function")
    _check_count("num_workers", num_workers, 1)
    if num_chief_replicas is not None and (type(num_chief_replicas) is not int or num_chief_replicas != 1):
        raise ValueError(f"num_chief_replicas must be 1 (or None for no Chief), got {num_chief_replicas}")
    if num_ps_replicas is not None:
        _check_count("num_ps_replicas", num_ps_replicas, 0)
    pod_volumes = _objects(volumes, "volumes")
    mounts = _objects(volume_mounts, "volume_mounts")
    if len(pod_volumes) != len(mounts):
        raise ValueError(f"volumes and volume_mounts must have the same length: {len(pod_volumes)} vs. {len(mounts)}")
    resources = _resources(resources_per_worker)
    if base_image is None:
        gpus = resources["limits"].get(GPU_RESOURCE) if resources else None
        base_image = DEFAULT_GPU_BASE_IMAGE if gpus is not None and parse_quantity(gpus) else DEFAULT_BASE_IMAGE
    elif not isinstance(base_image, str) or not base_image:
        raise ValueError(f"base_image must be a non-empty string, got {base_image!r}")

    container: dict[str, Any] = {"name": CONTAINER_NAME, "image": base_image}
    optional = {"command": command, "args": args, "env": _env(env_vars), "resources": resources,
                "volumeMounts": mounts}
    container.update({key: value for key, value in optional.items() if value})
    pod_spec: dict[str, Any] = {"containers": [container]}
    if pod_volumes:
        pod_spec["volumes"] = pod_volumes
    template = {"metadata": {"annotations": {ISTIO_SIDECAR_INJECTION: "false"}}, "spec": pod_spec}
    counts = ((CHIEF, num_chief_replicas), (PS, num_ps_replicas), (WORKER, num_workers))
    replica_specs = {kind: {"replicas": count, "template": copy.deepcopy(template)}
                     for kind, count in counts if count is not None}

    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    manifest = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata,
                "spec": {"runPolicy": {}, "tfReplicaSpecs": replica_specs}}
    parse_tf_job(manifest, namespace=namespace, default_namespace="default")
    return manifest


def _check_count(parameter: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{parameter} must be an integer >= {minimum}, got {value!r}")


def _strings(values: Sequence[str] | None, parameter: str) -> list[str] | None:
    """A list of strings; a bare string is refused (it would be split into characters)."""
    if values is None:
        return None
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{parameter} must be a list of strings, got {values!r}")
    return list(values)


def _objects(values: Sequence[Mapping[str, Any]] | None, parameter: str) -> list[dict[str, Any]]:
    if values is None:
        return []
    if isinstance(values, (str, Mapping)):
        raise ValueError(f"{parameter} must be a list of dicts, got {type(values).__name__}")
    for index, value in enumerate(values):
        if not isinstance(value, Mapping):
            raise ValueError(f"{parameter}[{index}] must be a dict (the Kubernetes JSON form), got {value!r}")
    return [copy.deepcopy(dict(value)) for value in values]


def _resources(resources_per_worker: Mapping[str, Quantity] | None) -> dict[str, dict[str, Quantity]] | None:
    """cpu/memory/gpu (any case) as both requests and limits; gpu becomes `nvidia.com/gpu`."""
    if resources_per_worker is None:
        return None
    if not isinstance(resources_per_worker, Mapping):
        raise ValueError(f"resources_per_worker must be a dict, got {type(resources_per_worker).__name__}")
    amounts: dict[str, Quantity] = {}
    for key, amount in resources_per_worker.items():
        resource = RESOURCE_NAMES.get(str(key).lower())
        if resource is None:
            raise ValueError(f"resources_per_worker: unknown resource {key!r}; supported keys: cpu, memory, gpu")
        try:
            parse_quantity(amount)
        except QuantityError as err:
            raise ValueError(f"resources_per_worker[{key!r}] is not a resource quantity: {amount!r} "
                             f"({err.reason})") from None
        amounts[resource] = amount
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else None


def _env(env_vars: EnvVars | None) -> list[dict[str, Any]] | None:
    """A {name: value} dict or a list of EnvVar dicts (name, value or valueFrom) as the container's env."""
    if not env_vars:
        return None
    if isinstance(env_vars, Mapping):
        entries: list[dict[str, Any]] = [{"name": key, "value": value} for key, value in env_vars.items()]
    elif isinstance(env_vars, str):
        raise ValueError("env_vars must be a dict or a list of dicts, got str")
    else:
        entries = []
        for index, entry in enumerate(env_vars):
            unknown = sorted(set(entry) - ENV_VAR_KEYS) if isinstance(entry, Mapping) else None
            if unknown is None or unknown:
                raise ValueError(f"env_vars[{index}] must be a dict with keys name, value or valueFrom, got {entry!r}")
            entries.append(copy.deepcopy(dict(entry)))
    for entry in entries:
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ValueError(f"env_vars: every variable needs a non-empty string name, got {entry!r}")
        if "value" in entry and not isinstance(entry["value"], str):
            raise ValueError(f"env_vars[{entry['name']!r}]: the value must be a string, got {entry['value']!r}")
    return entries


def _function_source(train_func: Callable[..., object]) -> str:
    """The dedented source of a plain top-level-style function; anything that cannot run alone is refused."""
    if not inspect.isfunction(train_func):
        raise ValueError(f"train_func must be a function defined with def, got {type(train_func).__name__}")
    label = train_func.__qualname__
    if train_func.__name__ == "<lambda>":
        raise ValueError("train_func must be defined with def: a lambda has no source of its own to embed")
    if train_func.__code__.co_freevars:
        names = ", ".join(train_func.__code__.co_freevars)
        raise ValueError(f"train_func {label} uses variables of an enclosing function ({names}); pass them "
                         "as parameters or define them inside the function")
    try:
        source = textwrap.dedent(inspect.getsource(train_func))
    except (OSError, TypeError) as exc:
        raise ValueError(f"the source of train_func {label} is not available: {exc}") from exc
    if source.lstrip().startswith("@"):
        raise ValueError(f"train_func {label} is decorated; the decorator would not exist in the script")
    return source


def _literal(parameters: Mapping[str, Any]) -> str:
    """`parameters` as Python source; only literals survive the trip into the script unchanged."""
    if not isinstance(parameters, Mapping):
        raise ValueError(f"parameters must be a dict, got {type(parameters).__name__}")
    text = repr(dict(parameters))
    try:
        same = ast.literal_eval(text) == dict(parameters)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        same = False
    if not same:
        raise ValueError("parameters must hold only Python literals (str, numbers, bool, None, and lists, "
                         f"tuples, sets and dicts of them): {text}")
    return text


def _quote(word: str) -> str:
    """A single-quoted shell word."""
    return "'" + word.replace("'", "'\"'\"'") + "'"
