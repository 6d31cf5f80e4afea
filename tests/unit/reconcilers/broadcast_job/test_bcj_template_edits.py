"""A template edit on a running job: accepted (V11) and applied to later pods only, as upstream (#1033).

This is what docs/broadcastjob.md promises instead of V18 (no immutability, no re-run mode).
"""

from __future__ import annotations

from support.bcj_builders import CONTAINER, BCJCluster, created_nodes, make_nodes, make_spec


def test_V11_a_template_edit_reaches_only_the_pods_created_after_it() -> None:
    cluster = BCJCluster(make_spec(parallelism=1), make_nodes(2))
    (first,) = cluster.step().create_pods
    assert first["spec"]["containers"][0]["image"] == "busybox:1.36"
    cluster.set_phase("Running")
    before = cluster.pod_on("node-00")

    cluster.spec = make_spec(parallelism=1, pod_spec={"containers": [{**CONTAINER, "image": "busybox:2"}]})
    plan = cluster.step()
    assert (plan.deletes, plan.create_pods) == ((), ()), "the running pod is neither replaced nor duplicated"
    assert cluster.pod_on("node-00") == before

    cluster.set_phase("Succeeded", ["node-00"])
    plan = cluster.step()
    assert created_nodes(plan) == ["node-01"], "the finished node is not re-run for the new template"
    assert plan.create_pods[0]["spec"]["containers"][0]["image"] == "busybox:2"
    assert plan.deletes == ()
