"""Corpus: YAML/JSON text and Python objects that cannot be decoded into a manifest within its bounds."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from unit.specs.hostile.corpus import (
    BCJ_CONTAINER,
    TF_CONTAINER,
    Case,
    Kind,
    Source,
    base_yaml,
    edited,
)

BCJ: Kind = "BroadcastJob"
TF: Kind = "TFJob"
WHOLE = "manifest"  # a problem of the text as a whole is reported for the manifest, with no field to name


def laughs(levels: int) -> str:
    """The billion-laughs alias bomb: each level repeats the previous one nine times."""
    lines = ['lol:', '  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"  {name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


def prefixed(kind: Kind, text: str) -> str:
    """Extra top-level YAML before a valid manifest of the kind."""
    return text + base_yaml(kind)


def replaced(kind: Kind, old: str, new: str) -> str:
    text = base_yaml(kind)
    assert old in text, old
    return text.replace(old, new, 1)


def list_after(kind: Kind, item: str, count: int) -> str:
    """The kind's YAML with `count` more items after the list item `item`, indented as it is."""
    text = base_yaml(kind)
    line = next(line for line in text.splitlines() if line.strip() == item)
    indent = line[:len(line) - len(line.lstrip())]
    return text.replace(line + "\n", line + "\n" + "".join(f"{indent}- w{i}\n" for i in range(count)), 1)


def self_referencing() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["loop"] = loop
    return edited(BCJ, (("spec", "loop"), loop))


def self_containing_list() -> dict[str, Any]:
    args: list[Any] = []
    args.append(args)
    return edited(BCJ, ((*BCJ_CONTAINER, "args"), args))


def shared_bomb() -> dict[str, Any]:
    """Ten levels of one list referenced ten times: 10^10 strings when expanded, a few objects in memory."""
    bomb: list[Any] = ["lol"]
    for _ in range(10):
        bomb = [bomb] * 10
    return edited(TF, ((*TF_CONTAINER, "args"), bomb))


def deep_dict(depth: int) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for _ in range(depth):
        nested = {"deep": nested}
    return edited(BCJ, (("spec", "deep"), nested))


def deep_block(kind: Kind, depth: int) -> str:
    lines = ["spec:"] + [" " * level + "k:" for level in range(1, depth)] + [" " * depth + "k: v"]
    return "\n".join(lines) + "\n"


def text_case(name: str, kind: Kind, build: Source | Any, path: str) -> Case:
    return Case(name, kind, build if callable(build) else (lambda: build), path, "yaml-and-decoding")


def text_cases() -> list[Case]:
    bcj_value = "spec.template.spec.containers[0].env[0].value"
    return [
        # nesting, before anything recursive runs
        text_case("yaml-deep-flow-150", BCJ, lambda: prefixed(BCJ, "deep: " + "[" * 150 + "]" * 150 + "\n"),
                  "deep" + "[0]" * 90),
        text_case("yaml-deep-flow-100000", TF, lambda: "spec: " + "[" * 100_000 + "]" * 100_000, "line 1, column"),
        text_case("yaml-deep-block-150", BCJ, lambda: deep_block(BCJ, 150), "spec" + ".k" * 99),
        text_case("yaml-deep-block-tf", TF, lambda: deep_block(TF, 120), "spec" + ".k" * 99),
        text_case("json-deep-array", TF, lambda: '{"spec": ' + "[" * 5000 + "]" * 5000 + "}", "line 1, column"),
        # aliases: each use costs what it expands to
        text_case("yaml-billion-laughs", BCJ, lambda: prefixed(BCJ, laughs(9)), "lol.e["),
        text_case("yaml-billion-laughs-tf", TF, lambda: prefixed(TF, laughs(7)), "lol.e["),
        text_case("yaml-alias-of-a-big-string", BCJ,
                  lambda: prefixed(BCJ, f"big:\n  a: &a {'x' * 200_000}\n  b: [*a, *a, *a]\n"), "big.b[1]"),
        text_case("yaml-alias-of-a-big-object", TF,
                  lambda: prefixed(TF, "big:\n  a: &a {" + ", ".join(f"k{i}: v" for i in range(4000))
                                   + "}\n  b: [*a, *a, *a, *a, *a]\n"), "big.b["),
        text_case("yaml-undefined-alias", BCJ, lambda: replaced(BCJ, "name: hostile", "name: *nowhere"),
                  "metadata.name"),
        text_case("yaml-recursive-alias", TF, lambda: prefixed(TF, "loop: &loop [1, *loop]\n"), "loop[1]"),
        text_case("yaml-merge-of-a-scalar", BCJ, lambda: replaced(BCJ, "metadata:\n", "metadata:\n  <<: 5\n"),
                  "metadata"),
        text_case("yaml-merge-of-a-list-of-scalars", TF,
                  lambda: replaced(TF, "metadata:\n", "metadata:\n  <<: [1, 2]\n"), "metadata"),
        # tags beyond the JSON types
        text_case("yaml-binary-env-value", BCJ, lambda: replaced(BCJ, "value: fast", "value: !!binary aGVsbG8="),
                  bcj_value),
        text_case("yaml-custom-tag-image", TF,
                  lambda: replaced(TF, "image: tensorflow/tensorflow:2.9.1", "image: !vault secret/image"),
                  "spec.tfReplicaSpecs.PS.template.spec.containers[0].image"),
        text_case("yaml-set-labels", BCJ, lambda: replaced(BCJ, "  labels:\n    app: x\n", "  labels: !!set {a, b}\n"),
                  "metadata.labels"),
        text_case("yaml-omap-annotations", TF,
                  lambda: replaced(TF, "  annotations:\n    note: x\n", "  annotations: !!omap [a: b]\n"),
                  "metadata.annotations"),
        text_case("yaml-python-object-tag", BCJ,
                  lambda: replaced(BCJ, "value: fast", "value: !!python/object/apply:os.system [id]"), bcj_value),
        # keys must be strings
        text_case("yaml-int-label-key", BCJ, lambda: replaced(BCJ, "  labels:\n    app: x\n", "  labels:\n    1: x\n"),
                  "metadata.labels"),
        text_case("yaml-bool-annotation-key", TF,
                  lambda: replaced(TF, "  annotations:\n    note: x\n", "  annotations:\n    yes: x\n"),
                  "metadata.annotations"),
        text_case("yaml-null-key", BCJ, lambda: replaced(BCJ, "spec:\n  parallelism", "spec:\n  ~: x\n  parallelism"),
                  "spec"),
        text_case("yaml-float-replica-type-key", TF,
                  lambda: replaced(TF, "tfReplicaSpecs:\n", "tfReplicaSpecs:\n    1.5: {}\n"), "spec.tfReplicaSpecs"),
        text_case("yaml-complex-key", BCJ, lambda: replaced(BCJ, "metadata:\n", "metadata:\n  ? [a, b]\n  : c\n"),
                  "metadata"),
        # numbers JSON cannot carry
        text_case("yaml-nan-replicas", TF, lambda: replaced(TF, "replicas: 2", "replicas: .nan"),
                  "spec.tfReplicaSpecs.Worker.replicas"),
        text_case("yaml-inf-deadline", BCJ,
                  lambda: replaced(BCJ, "activeDeadlineSeconds: 60", "activeDeadlineSeconds: .inf"),
                  "spec.completionPolicy.activeDeadlineSeconds"),
        text_case("yaml-float-overflow-to-inf", TF, lambda: replaced(TF, "backoffLimit: 3", "backoffLimit: 1.0e+999"),
                  "spec.runPolicy.backoffLimit"),
        text_case("yaml-5000-digit-integer", BCJ, lambda: replaced(BCJ, "parallelism: 2", "parallelism: " + "9" * 5000),
                  "spec.parallelism"),
        text_case("yaml-int-tag-on-text", TF, lambda: replaced(TF, "replicas: 2", "replicas: !!int two"),
                  "spec.tfReplicaSpecs.Worker.replicas"),
        # size: the text, then the decoded JSON
        text_case("text-over-1-mib", BCJ, lambda: "# " + "x" * (1024 * 1024) + "\n" + base_yaml(BCJ), WHOLE),
        text_case("text-over-1-mib-tf", TF, lambda: base_yaml(TF) + "# " + "y" * (1024 * 1024) + "\n", WHOLE),
        text_case("text-over-1-mib-multibyte", BCJ, lambda: "# " + "é" * 600_000 + "\n" + base_yaml(BCJ), WHOLE),
        text_case("yaml-600k-annotation", BCJ, lambda: replaced(BCJ, "note: x", "note: " + "n" * 600_000),
                  "metadata.annotations.note"),
        text_case("yaml-25000-command-words", TF, lambda: list_after(TF, "- train.py", 25_000),
                  "spec.tfReplicaSpecs.PS.template.spec.containers[0].command["),
        # documents and syntax
        text_case("yaml-two-documents", BCJ, lambda: base_yaml(BCJ) + "---\n" + base_yaml(BCJ), WHOLE),
        text_case("yaml-empty", TF, lambda: "", WHOLE),
        text_case("yaml-only-comments", BCJ, lambda: "# nothing\n---\n", WHOLE),
        text_case("yaml-top-level-list", TF, lambda: "- a\n- b\n", WHOLE),
        text_case("yaml-top-level-string", BCJ, lambda: "just words", WHOLE),
        text_case("yaml-tab-indentation", BCJ, lambda: "metadata:\n  name: x\n\tspec: y\n", "line 3, column 1"),
        text_case("yaml-unclosed-flow", TF, lambda: "metadata: {name: [unclosed\n", "line 2, column 1"),
        text_case("yaml-control-character", BCJ, lambda: "metadata:\n  name: a\x00b\n", "position 19"),
        text_case("yaml-lone-surrogate", TF, lambda: "metadata:\n  name: a\ud800b\n", "position 19"),
        text_case("json-nan-parallelism", BCJ,
                  lambda: '{"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "x"},'
                          ' "spec": {"parallelism": NaN, "template": {}}}', "spec.parallelism"),
        # Python objects handed to the operator as the manifest
        text_case("dict-self-reference", BCJ, self_referencing, "spec.loop.loop.loop"),
        text_case("list-self-reference", BCJ, self_containing_list, "spec.template.spec.containers[0].args[0][0]"),
        text_case("dict-shared-reference-bomb", TF, shared_bomb, "spec.tfReplicaSpecs.Worker.template"),
        text_case("dict-10000-deep", BCJ, lambda: deep_dict(10_000), "spec.deep.deep.deep"),
        text_case("dict-set-label", BCJ, lambda: edited(BCJ, (("metadata", "labels", "app"), {"a", "b"})),
                  "metadata.labels.app"),
        text_case("dict-bytes-env-value", TF, lambda: edited(TF, ((*TF_CONTAINER, "env", 0, "value"), b"fast")),
                  "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[0].value"),
        text_case("dict-datetime-annotation", BCJ,
                  lambda: edited(BCJ, (("metadata", "annotations", "note"), datetime.datetime(2030, 1, 1))),
                  "metadata.annotations.note"),
        text_case("dict-decimal-parallelism", BCJ, lambda: edited(BCJ, (("spec", "parallelism"), decimal.Decimal(2))),
                  "spec.parallelism"),
        text_case("dict-object-value", TF, lambda: edited(TF, (("spec", "successPolicy"), object())),
                  "spec.successPolicy"),
        text_case("dict-tuple-label-key", BCJ, lambda: edited(BCJ, (("metadata", "labels"), {("a", "b"): "x"})),
                  "metadata.labels"),
        text_case("dict-int-replica-type-key", TF, lambda: edited(TF, (("spec", "tfReplicaSpecs", 1), {})),
                  "spec.tfReplicaSpecs"),
        text_case("dict-nan-replicas", TF,
                  lambda: edited(TF, (("spec", "tfReplicaSpecs", "Worker", "replicas"), float("nan"))),
                  "spec.tfReplicaSpecs.Worker.replicas"),
        text_case("dict-inf-ttl", BCJ, lambda: edited(BCJ, (("spec", "completionPolicy", "ttlSecondsAfterFinished"),
                                                            float("inf"))),
                  "spec.completionPolicy.ttlSecondsAfterFinished"),
        text_case("dict-million-args", BCJ, lambda: edited(BCJ, ((*BCJ_CONTAINER, "args"), list(range(1_000_000)))),
                  "spec.template.spec.containers[0].args"),
        text_case("dict-1mb-name", TF, lambda: edited(TF, (("metadata", "name"), "a" * 1_000_000)), "metadata.name"),
    ]
