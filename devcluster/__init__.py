"""A real local Kubernetes control plane for tests, demos and benchmarks.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler run as local
processes on loopback, and kwok simulates the nodes and the pod lifecycles.
This package is development tooling: it is not part of the provider's wheel.
"""

from devcluster.control_plane import ClusterInfo, ClusterStartError, ControlPlane

__all__ = ["ClusterInfo", "ClusterStartError", "ControlPlane"]
