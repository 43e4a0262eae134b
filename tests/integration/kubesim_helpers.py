"""Inputs for the simulator's self-tests: CAs, kubeadm cloud-config documents and EC2 instances made directly in
moto, for the tests that need a node fast (no boot hook, no secret backend: plain ``#cloud-config`` user data, as a
cluster without the secure backend would boot). The documents have the shape the collection renders
(``## template: jinja`` header, ``write_files`` with the PKI and ``/run/kubeadm/kubeadm.yaml``, ``runcmd`` with
``kubeadm init|join --config``); tests that need the collection's own documents run its modules instead.
"""

from __future__ import annotations

import datetime
import hashlib
import secrets
import string
from dataclasses import dataclass
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

OWNER = "sigs.k8s.io/cluster-api-provider-aws/cluster/{}"
VERSION = "v1.31.2"


@dataclass
class Pki:
    ca_cert: str
    ca_key: str
    etcd_cert: str
    etcd_key: str
    token: str

    @property
    def ca_hash(self) -> str:
        cert = x509.load_pem_x509_certificate(self.ca_cert.encode())
        der = cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return "sha256:" + hashlib.sha256(der).hexdigest()


def new_ca(common_name: str) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


def new_token() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return (
        "".join(secrets.choice(alphabet) for _i in range(6))
        + "."
        + "".join(secrets.choice(alphabet) for _i in range(16))
    )


def new_pki() -> Pki:
    ca_cert, ca_key = new_ca("kubernetes")
    etcd_cert, etcd_key = new_ca("etcd-ca")
    return Pki(ca_cert, ca_key, etcd_cert, etcd_key, new_token())


def cloud_config(
    role: str,
    pki: Pki,
    cluster: str,
    endpoint: str,
    token: str | None = None,
    ca_hash: str | None = None,
    version: str = VERSION,
) -> str:
    registration = {
        "name": "{{ ds.meta_data.local_hostname }}",
        "kubeletExtraArgs": [{"name": "cloud-provider", "value": "external"}],
    }
    if role == "init":
        docs: list[dict[str, Any]] = [
            {
                "apiVersion": "kubeadm.k8s.io/v1beta4",
                "kind": "InitConfiguration",
                "bootstrapTokens": [
                    {
                        "token": pki.token,
                        # Long enough for any test; never "0s": no token of a test outlives it for good.
                        "ttl": "3600s",
                        "groups": ["system:bootstrappers:kubeadm:default-node-token"],
                        "usages": ["signing", "authentication"],
                    }
                ],
                "nodeRegistration": registration,
            },
            {
                "apiVersion": "kubeadm.k8s.io/v1beta4",
                "kind": "ClusterConfiguration",
                "clusterName": cluster,
                "kubernetesVersion": version,
                "controlPlaneEndpoint": endpoint,
                "networking": {"podSubnet": "192.168.0.0/16", "serviceSubnet": "10.96.0.0/12"},
            },
        ]
    else:
        join: dict[str, Any] = {
            "apiVersion": "kubeadm.k8s.io/v1beta4",
            "kind": "JoinConfiguration",
            "discovery": {
                "bootstrapToken": {
                    "apiServerEndpoint": endpoint,
                    "token": token or pki.token,
                    "caCertHashes": [ca_hash or pki.ca_hash],
                }
            },
            "nodeRegistration": registration,
        }
        if role == "join-control-plane":
            join["controlPlane"] = {}
        docs = [join]
    files = []
    if role != "join-worker":
        for path, content in (
            ("ca.crt", pki.ca_cert),
            ("ca.key", pki.ca_key),
            ("etcd/ca.crt", pki.etcd_cert),
            ("etcd/ca.key", pki.etcd_key),
        ):
            files.append({"path": f"/etc/kubernetes/pki/{path}", "permissions": "0600", "content": content})
    files.append(
        {
            "path": "/run/kubeadm/kubeadm.yaml",
            "permissions": "0600",
            "content": "---\n".join(yaml.safe_dump(d) for d in docs),
        }
    )
    command = "init" if role == "init" else "join"
    config = {
        "write_files": files,
        "runcmd": [
            "mkdir -p /run/cluster-api",
            f"kubeadm {command} --config /run/kubeadm/kubeadm.yaml && echo success > "
            "/run/cluster-api/bootstrap-success.complete",
        ],
    }
    return "## template: jinja\n#cloud-config\n" + yaml.safe_dump(config, width=1 << 16)


def subnet(aws: Any, cidr: str = "10.0.0.0/16", zone: str = "us-east-1a") -> str:
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    return ec2.create_subnet(VpcId=vpc, CidrBlock=cidr.replace("0.0/16", "1.0/24"), AvailabilityZone=zone)["Subnet"][
        "SubnetId"
    ]


def launch(aws: Any, cluster: str, name: str, user_data: str, subnet_id: str, role: str = "control-plane") -> str:
    answer = aws.client("ec2").run_instances(
        ImageId="ami-12c6146b",
        MinCount=1,
        MaxCount=1,
        InstanceType="t3.large",
        SubnetId=subnet_id,
        UserData=user_data,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": OWNER.format(cluster), "Value": "owned"},
                    {"Key": "Name", "Value": name},
                    {"Key": "sigs.k8s.io/cluster-api-provider-aws/role", "Value": role},
                ],
            }
        ],
    )
    return answer["Instances"][0]["InstanceId"]


def calico_and_ccm() -> list[dict[str, Any]]:
    """A CNI DaemonSet (calico-node) and the AWS cloud controller manager, as addon manifests ship them."""
    tolerate_all = [{"operator": "Exists"}]
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "calico-node", "namespace": "kube-system", "labels": {"k8s-app": "calico-node"}},
            "spec": {
                "selector": {"matchLabels": {"k8s-app": "calico-node"}},
                "template": {
                    "metadata": {"labels": {"k8s-app": "calico-node"}},
                    "spec": {
                        "hostNetwork": True,
                        "tolerations": tolerate_all,
                        "containers": [{"name": "calico-node", "image": "calico/node:v3.28.2"}],
                    },
                },
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": "aws-cloud-controller-manager",
                "namespace": "kube-system",
                "labels": {"k8s-app": "aws-cloud-controller-manager"},
            },
            "spec": {
                "selector": {"matchLabels": {"k8s-app": "aws-cloud-controller-manager"}},
                "template": {
                    "metadata": {"labels": {"k8s-app": "aws-cloud-controller-manager"}},
                    "spec": {
                        "hostNetwork": True,
                        "tolerations": tolerate_all,
                        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                        "containers": [
                            {"name": "ccm", "image": "registry.k8s.io/provider-aws/cloud-controller-manager:v1.31.1"}
                        ],
                    },
                },
            },
        },
    ]


def eks_token(credentials: Any, region: str, eks_name: str) -> str:
    """A bearer token as ``aws eks get-token`` makes it: ``k8s-aws-v1.`` + base64url of a presigned STS
    GetCallerIdentity URL signed with the ``x-k8s-aws-id`` header."""
    import base64

    from botocore.hooks import HierarchicalEmitter
    from botocore.model import ServiceId
    from botocore.signers import RequestSigner

    emitter = HierarchicalEmitter()
    signer = RequestSigner(ServiceId("sts"), region, "sts", "v4", credentials, emitter)
    request = {
        "method": "GET",
        "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {"x-k8s-aws-id": eks_name},
        "context": {},
    }
    url = signer.generate_presigned_url(request, region_name=region, expires_in=60, operation_name="GetCallerIdentity")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def nodeadm_cloud_config(cluster: dict[str, Any], labels: dict[str, str] | None = None) -> str:
    """An EKS self-managed node's ``#cloud-config``: a nodeadm NodeConfig written to disk and ``nodeadm init``."""
    spec: dict[str, Any] = {
        "cluster": {
            "name": cluster["name"],
            "apiServerEndpoint": cluster["endpoint"],
            "certificateAuthority": cluster["certificateAuthority"]["data"],
            "cidr": "10.100.0.0/16",
        }
    }
    if labels:
        spec["kubelet"] = {"flags": ["--node-labels=" + ",".join(f"{k}={v}" for k, v in labels.items())]}
    node_config = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}
    path = "/etc/eks/nodeadm.d/test.yaml"
    document = {
        "write_files": [{"path": path, "permissions": "0600", "content": yaml.safe_dump(node_config)}],
        "runcmd": [f"nodeadm init --config-source file://{path}"],
    }
    return "#cloud-config\n" + yaml.safe_dump(document)
