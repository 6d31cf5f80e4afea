"""Checklist N2: a TFJob built from an image or a Python function, as `TrainingClient.create_job` builds it.

The embedded training scripts are run for real with the local bash and Python (a `python` shim on
PATH stands in for the image's interpreter), so the tests show what a replica would execute.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.tf_job import parse_tf_job
from airflow_broadcast.specs.tf_job.builder import (
    DEFAULT_BASE_IMAGE,
    DEFAULT_GPU_BASE_IMAGE,
    tf_job_from_callable,
    tf_job_from_image,
    train_script,
)

ISTIO = "sidecar.istio.io/inject"


def train_with(parameters: dict[str, Any]) -> None:
    import json
    import pathlib
    import sys

    run = {"parameters": parameters, "script": pathlib.Path(sys.argv[0]).name, "unbuffered": sys.stdout.write_through}
    pathlib.Path(parameters["out"]).write_text(json.dumps(run))
    print("trained with", parameters["lr"])


def train_without_arguments() -> None:
    import pathlib

    pathlib.Path("called.txt").write_text("no arguments")


def train_with_shell_characters(parameters: dict[str, Any]) -> None:
    import pathlib

    text = """$HOME `echo injected` \\n $(echo nope) 'single' "double"
EOM
"""
    pathlib.Path(parameters["out"]).write_text(text)


def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
    return func


@decorator
def decorated_train() -> None:
    print("never embedded")


def container_of(manifest: dict[str, Any], replica: str = "Worker") -> dict[str, Any]:
    (container,) = manifest["spec"]["tfReplicaSpecs"][replica]["template"]["spec"]["containers"]
    return dict(container)


def run_container(container: dict[str, Any], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run the container's command + args locally; `python -m ...` calls (pip) are logged, not run."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "python"
    shim.write_text(f'#!/bin/bash\nif [ "$1" = "-m" ]; then printf "%s\\n" "$*" >> "{workdir}/python-m.log"; '
                    f'exit 0; fi\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "TMPDIR": str(workdir), "HOME": "/nonexistent-home"}
    return subprocess.run([*container["command"], *container["args"]], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=60)


# ---- replicas and template ----------------------------------------------------------------------

def test_N2_chief_ps_worker_counts_share_one_template() -> None:
    job = tf_job_from_image("mnist", base_image="tf:2", num_chief_replicas=1, num_ps_replicas=2, num_workers=3)

    specs = job["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["Chief", "PS", "Worker"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Chief": 1, "PS": 2, "Worker": 3}
    assert specs["Chief"]["template"] == specs["PS"]["template"] == specs["Worker"]["template"]
    assert all(set(spec) == {"replicas", "template"} for spec in specs.values()), "restartPolicy is left unset"
    assert job["spec"]["runPolicy"] == {}, "no cleanPodPolicy: the SDK sends an empty runPolicy"
    specs["PS"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert specs["Worker"]["template"]["spec"]["containers"][0]["image"] == "tf:2", "equal copies, not aliases"
    parsed = parse_tf_job(job)
    assert {t: (r.replicas, r.restart_policy) for t, r in parsed.replica_specs.items()} == {
        "Chief": (1, "Never"), "PS": (2, "Never"), "Worker": (3, "Never")}
    assert parsed.run_policy.clean_pod_policy == "None"


def test_N2_without_chief_or_ps_there_is_one_worker() -> None:
    job = tf_job_from_image("solo")
    assert job["spec"]["tfReplicaSpecs"].keys() == {"Worker"}
    assert job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 1
    assert container_of(job) == {"name": "tensorflow", "image": DEFAULT_BASE_IMAGE}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"num_workers": 0}, "num_workers must be an integer >= 1, got 0"),
    ({"num_workers": True}, "num_workers must be an integer >= 1, got True"),
    ({"num_workers": 1.5}, "num_workers must be an integer >= 1, got 1.5"),
    ({"num_chief_replicas": 2}, r"num_chief_replicas must be 1 \(or None for no Chief\), got 2"),
    ({"num_chief_replicas": 0}, "num_chief_replicas must be 1"),
    ({"num_ps_replicas": -1}, "num_ps_replicas must be an integer >= 0, got -1"),
])
def test_N2_replica_counts_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tf_job_from_image("counts", **kwargs)


def test_N2_istio_sidecar_annotation() -> None:
    job = tf_job_from_image("mesh", num_chief_replicas=1, num_ps_replicas=1, labels={"team": "ml"},
                            annotations={"owner": "data"})

    for spec in job["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["metadata"] == {"annotations": {ISTIO: "false"}}
    assert job["metadata"] == {"name": "mesh", "labels": {"team": "ml"}, "annotations": {"owner": "data"}}


def test_N2_name_and_namespace_go_to_the_job_metadata() -> None:
    job = tf_job_from_image("named", namespace="training")
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert job["metadata"] == {"name": "named", "namespace": "training"}
    assert "namespace" not in tf_job_from_image("named")["metadata"], "left to the operator's namespace"
    with pytest.raises(ValueError, match="name must be set"):
        tf_job_from_image("")
    with pytest.raises(InvalidSpecError, match=r'metadata\.name: Invalid value: "00test"'):
        tf_job_from_image("00test")


# ---- resources ----------------------------------------------------------------------------------

def test_N2_gpu_maps_to_nvidia_com_gpu_for_requests_and_limits() -> None:
    job = tf_job_from_image("gpus", resources_per_worker={"CPU": "4", "memory": "8Gi", "Gpu": 2})

    amounts = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 2}
    assert container_of(job)["resources"] == {"requests": amounts, "limits": amounts}
    assert container_of(job)["image"] == DEFAULT_GPU_BASE_IMAGE
    assert container_of(tf_job_from_image("own", base_image="my/tf:gpu", resources_per_worker={"gpu": 1}))[
        "image"] == "my/tf:gpu", "an explicit image is kept"


@pytest.mark.parametrize("resources", [{"cpu": "500m"}, {"cpu": 1, "gpu": "0"}])
def test_N2_without_a_gpu_the_cpu_image_is_used(resources: dict[str, Any]) -> None:
    assert container_of(tf_job_from_image("cpus", resources_per_worker=resources))["image"] == DEFAULT_BASE_IMAGE


def test_N2_empty_resources_are_left_out() -> None:
    assert "resources" not in container_of(tf_job_from_image("none", resources_per_worker={}))


def test_N2_unknown_resource_key_is_rejected() -> None:
    with pytest.raises(ValueError, match="resources_per_worker: unknown resource 'tpu'; supported keys: cpu, "
                                         "memory, gpu"):
        tf_job_from_image("tpus", resources_per_worker={"cpu": "1", "tpu": 1})


@pytest.mark.parametrize("amount", ["lots", None, True, [1]])
def test_N2_resource_amounts_must_be_quantities(amount: Any) -> None:
    with pytest.raises(ValueError, match=r"resources_per_worker\['memory'\] is not a resource quantity"):
        tf_job_from_image("bad", resources_per_worker={"memory": amount})


# ---- env, volumes -------------------------------------------------------------------------------

def test_N2_env_dict_and_list() -> None:
    from_dict = tf_job_from_image("envs", env_vars={"MODE": "train", "EPOCHS": "3"})
    from_list = tf_job_from_image("envs", env_vars=[{"name": "MODE", "value": "train"},
                                                    {"name": "EPOCHS", "value": "3"}])

    expected = [{"name": "MODE", "value": "train"}, {"name": "EPOCHS", "value": "3"}]
    assert container_of(from_dict)["env"] == container_of(from_list)["env"] == expected
    secret = {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}
    assert container_of(tf_job_from_image("refs", env_vars=[secret]))["env"] == [secret]
    assert "env" not in container_of(tf_job_from_image("empty", env_vars={}))


@pytest.mark.parametrize(("env_vars", "message"), [
    ([{"value": "x"}], "every variable needs a non-empty string name"),
    ([{"name": "A", "val": "x"}], r"env_vars\[0\] must be a dict with keys name, value or valueFrom"),
    (["A=x"], r"env_vars\[0\] must be a dict"),
    ({"EPOCHS": 3}, r"env_vars\['EPOCHS'\]: the value must be a string, got 3"),
    ("A=x", "env_vars must be a dict or a list of dicts"),
])
def test_N2_malformed_env_vars_are_rejected(env_vars: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tf_job_from_image("envs", env_vars=env_vars)


def test_N2_invalid_env_names_are_reported_by_the_validator() -> None:
    with pytest.raises(InvalidSpecError, match=r"containers\[0\]\.env\[0\]\.name"):
        tf_job_from_image("envs", env_vars={"1-bad": "x"})


def test_N2_volumes_and_mounts_must_have_equal_length() -> None:
    volume = {"name": "data", "emptyDir": {}}
    mount = {"name": "data", "mountPath": "/data"}
    with pytest.raises(ValueError, match=r"volumes and volume_mounts must have the same length: 2 vs\. 1"):
        tf_job_from_image("vols", volumes=[volume, {"name": "logs", "emptyDir": {}}], volume_mounts=[mount])
    with pytest.raises(ValueError, match=r"same length: 1 vs\. 0"):
        tf_job_from_image("vols", volumes=[volume])
    with pytest.raises(ValueError, match=r"same length: 0 vs\. 1"):
        tf_job_from_image("vols", volume_mounts=[mount])


def test_N2_volumes_go_to_the_pod_and_mounts_to_the_container() -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "mnist"}}]
    mounts = [{"name": "data", "mountPath": "/data", "readOnly": True}]
    job = tf_job_from_image("vols", volumes=volumes, volume_mounts=mounts, num_ps_replicas=1)

    for spec in job["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["spec"]["volumes"] == volumes
        assert spec["template"]["spec"]["containers"][0]["volumeMounts"] == mounts
    volumes[0]["name"] = "changed"
    assert job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["volumes"][0]["name"] == "data", "copied"


def test_N2_a_mount_of_an_undeclared_volume_is_reported_by_the_validator() -> None:
    with pytest.raises(InvalidSpecError, match=r'volumeMounts\[0\]\.name: Not found: "logs"'):
        tf_job_from_image("vols", volumes=[{"name": "data", "emptyDir": {}}],
                          volume_mounts=[{"name": "logs", "mountPath": "/logs"}])
    with pytest.raises(ValueError, match=r"volumes\[0\] must be a dict"):
        tf_job_from_image("vols", volumes=["data"], volume_mounts=[{"name": "data", "mountPath": "/d"}])


# ---- image and callable -------------------------------------------------------------------------

def test_N2_only_image_keeps_the_default_command() -> None:
    container = container_of(tf_job_from_image("img", base_image="registry.local/mnist:1"))
    assert container == {"name": "tensorflow", "image": "registry.local/mnist:1"}, "no command, no args"

    custom = container_of(tf_job_from_image("img", command=["python", "/app/train.py"], args=["--epochs", "3"]))
    assert (custom["command"], custom["args"]) == (["python", "/app/train.py"], ["--epochs", "3"])
    with pytest.raises(ValueError, match="command must be a list of strings"):
        tf_job_from_image("img", command="python train.py")


def test_N2_callable_source_is_embedded_and_run_with_python_u(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    job = tf_job_from_callable("func", train_with, parameters={"lr": 0.01, "out": str(out), "layers": [64, 32]},
                               num_workers=2, num_ps_replicas=1)

    container = container_of(job)
    assert container["command"] == ["bash", "-c"] and len(container["args"]) == 1
    script = container["args"][0]
    assert "from __future__ import annotations\n\ndef train_with(parameters: dict[str, Any]) -> None:\n" in script, \
        "annotations stay unevaluated, so `Any` needs no import in the script"
    assert f"\ntrain_with({{'lr': 0.01, 'out': '{out}', 'layers': [64, 32]}})\n" in script
    assert 'python -u "$program_path/ephemeral_script.py"' in script
    assert container_of(job, "PS") == container, "every replica runs the same script"

    ran = run_container(container, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "trained with 0.01\n"
    recorded = json.loads(out.read_text())
    assert recorded["parameters"] == {"lr": 0.01, "out": str(out), "layers": [64, 32]}, "one positional dict"
    assert recorded["script"] == "ephemeral_script.py"
    assert recorded["unbuffered"] is True, "python -u (stdout is a pipe here, so only -u makes it write-through)"
    assert not (tmp_path / "python-m.log").exists(), "nothing installed when no packages are given"


def test_N2_callable_without_parameters_is_called_with_no_arguments(tmp_path: Path) -> None:
    container = container_of(tf_job_from_callable("noargs", train_without_arguments))
    assert container["args"][0].count("\ntrain_without_arguments()\n") == 1

    ran = run_container(container, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "called.txt").read_text() == "no arguments"


def test_N2_shell_characters_in_the_source_reach_python_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "text.txt"
    container = container_of(tf_job_from_callable("quoting", train_with_shell_characters,
                                                  parameters={"out": str(out)}))
    assert "<< 'EOM_'" in container["args"][0], "a delimiter that no source line equals"

    ran = run_container(container, tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert out.read_text() == "$HOME `echo injected` \\n $(echo nope) 'single' \"double\"\nEOM\n"


def test_N2_packages_are_installed_first_from_the_index(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    job = tf_job_from_callable("deps", train_with, parameters={"lr": 1, "out": str(out)},
                               packages_to_install=["tensorflow-datasets>=4.9", "numpy==1.26.4"],
                               pip_index_url="https://pypi.internal/simple")
    script = container_of(job)["args"][0]
    assert script.index("pip install") < script.index("ephemeral_script.py")

    ran = run_container(container_of(job), tmp_path)
    assert ran.returncode == 0, ran.stderr
    installs = [line for line in (tmp_path / "python-m.log").read_text().splitlines() if "pip install" in line]
    assert installs == ["-m pip install --quiet --no-warn-script-location --index-url "
                        "https://pypi.internal/simple tensorflow-datasets>=4.9 numpy==1.26.4"]
    assert not (tmp_path / "=4.9").exists(), "a version specifier is one word, not a redirection"
    assert json.loads(out.read_text())["parameters"]["lr"] == 1, "training runs after the install"
    assert train_script(train_with, {"lr": 1, "out": "x"}, []) == train_script(train_with, {"lr": 1, "out": "x"})


def _closure_func() -> Callable[[], None]:
    captured = 3

    def inner() -> None:
        print(captured)

    return inner


class CallableObject:
    def __call__(self) -> None:
        print("an object")


@pytest.mark.parametrize(("func", "message"), [
    (lambda: None, "train_func must be defined with def: a lambda"),
    (_closure_func(), r"uses variables of an enclosing function \(captured\)"),
    (CallableObject(), "train_func must be a function defined with def, got CallableObject"),
    (len, "train_func must be a function defined with def, got builtin_function_or_method"),
    (decorated_train, "is decorated"),
    (functools.partial(train_with, {}), "got partial"),
])
def test_N2_functions_that_cannot_run_alone_are_rejected(func: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tf_job_from_callable("bad", func)


def test_N2_a_function_without_source_is_rejected() -> None:
    namespace: dict[str, Any] = {}
    exec("def generated():\n    pass\n", namespace)  # no file behind it
    with pytest.raises(ValueError, match="the source of train_func generated is not available"):
        tf_job_from_callable("bad", namespace["generated"])


@pytest.mark.parametrize("parameters", [{"when": object()}, {"x": float("nan")}, ["lr", 1]])
def test_N2_parameters_must_be_a_dict_of_literals(parameters: Any) -> None:
    with pytest.raises(ValueError, match="parameters must"):
        tf_job_from_callable("bad", train_with, parameters=parameters)


def test_N2_packages_and_index_are_checked() -> None:
    with pytest.raises(ValueError, match="packages_to_install must be a list of strings"):
        tf_job_from_callable("bad", train_with, packages_to_install="numpy")
    with pytest.raises(ValueError, match="pip_index_url must be a non-empty string"):
        tf_job_from_callable("bad", train_with, packages_to_install=["numpy"], pip_index_url="")


# ---- the result ---------------------------------------------------------------------------------

def test_N2_the_result_is_plain_json_and_accepted_by_tfjob_operator() -> None:
    job = tf_job_from_callable("handoff", train_without_arguments, num_chief_replicas=1, num_workers=2,
                               resources_per_worker={"cpu": "1", "memory": "1Gi"}, env_vars={"A": "1"},
                               volumes=[{"name": "d", "emptyDir": {}}],
                               volume_mounts=[{"name": "d", "mountPath": "/d"}])
    assert json.loads(json.dumps(job)) == job
    before = copy.deepcopy(job)

    parsed = TFJobOperator(task_id="t", manifest=job).parse(job, None, "airflow")
    assert (parsed.name, parsed.namespace) == ("handoff", "airflow")
    assert parsed.manifest["spec"] == job["spec"], "stored as built"
    assert job == before, "the operator works on a copy"
