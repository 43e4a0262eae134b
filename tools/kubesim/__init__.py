"""kubesim: the workload-cluster simulator of the clusterapi.aws test harness (see tools/kubesim/README.md).

It stands in for the other side of the wire - EC2 instances booting from their user data, kubeadm, kubelets,
real etcd members, a kube-apiserver per cluster, the cloud controller manager - and never imports the collection.
"""
