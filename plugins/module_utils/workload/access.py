# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (workload-cluster client): the workload cluster as one run reaches it, or why it does not.

:class:`KubernetesAccess` opens the cluster for a run - the API server with a client certificate minted from the
cluster CA, etcd through the API server with one minted from the etcd CA - and reads it once per step
(:meth:`KubernetesAccess.observe`: one Node list, one pod list of the control-plane namespace, one etcd status).

``kubernetes_api.mode`` decides what happens without an API server to talk to:

* ``auto`` (default): use it when it answers; when it does not, workers are judged by the AWS-only signal
  ``InstanceRunning`` and removed without a drain, each with a warning; a control-plane scale-down or replacement
  is refused before any change (etcd quorum cannot be kept without etcd).
* ``required``: the run fails before any change when the API server does not answer.
* ``none``: never contact it (no route from the controller); otherwise as ``auto`` without the API.
"""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Mapping

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; the sanity import test runs without it
    yaml = None  # type: ignore[assignment]

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError, SpecError
from ..kernel.options import Option, filled
from . import credentials
from .etcd import Etcd, EtcdStatus
from .kube import UNREACHABLE, ApiTarget, KubeApi
from .observe import NodeView, Workload, static_pods_of

MODES = ("auto", "required", "none")
# The ``kubernetes_api`` option of every module that talks to the workload cluster (doc fragment
# ``clusterapi.aws.kubernetes_api``, checked against this declaration by a unit test).
KUBERNETES_API = Option(
    "kubernetes_api",
    "How the controller reaches the cluster's Kubernetes API server (and, through it, etcd).",
    type="dict",
    default={},
    options=(
        Option(
            "mode",
            [
                "C(auto) - use the API when it answers. When it does not, workers are judged by the AWS-only signal "
                "C(InstanceRunning) and removed without a drain, each with a warning, and a control-plane scale-down "
                "or replacement is refused before any change.",
                "C(required) - fail before any change when the API does not answer.",
                "C(none) - never contact it (no route from the controller); otherwise as C(auto) without the API.",
            ],
            choices=MODES,
            default="auto",
        ),
        Option(
            "server",
            "Reach the API server at this URL (C(https://host:port)) instead of the control-plane endpoint - a tunnel, "
            "an SSM port forward or a bastion C(ssh -L) to a private cluster. The server certificate is still checked "
            "for the endpoint's name (or I(tls_server_name)).",
        ),
        Option(
            "tls_server_name", "The name the API server's certificate must carry, when it is not the endpoint host."
        ),
        Option("proxy", "An HTTP CONNECT proxy (C(http://host:port)) to the API server."),
        Option("timeout", "Seconds to wait for a connection (reads wait three times as long).", type="int", default=10),
    ),
)
CONTROL_PLANE_NAMESPACE = "kube-system"
CONTROL_PLANE_PODS = "tier=control-plane"


@dataclass(frozen=True)
class KubernetesApiSettings:
    """The ``kubernetes_api`` option: how (and whether) the controller reaches the cluster's API server."""

    mode: str = "auto"
    server: str | None = None  # reach the API here instead of the control-plane endpoint (tunnel, proxy, override)
    tls_server_name: str | None = None  # the name the server certificate must carry (default: the endpoint host)
    proxy: str | None = None  # HTTP CONNECT proxy
    timeout: int = 10

    @classmethod
    def from_params(cls, value: dict[str, Any] | None) -> KubernetesApiSettings:
        """The option's value with what is unset taken from its declaration (:data:`KUBERNETES_API`)."""
        settings = filled(KUBERNETES_API, value)
        return cls(
            mode=settings["mode"],
            server=settings["server"],
            tls_server_name=settings["tls_server_name"],
            proxy=settings["proxy"],
            timeout=settings["timeout"],
        )

    def validate(self, where: str = "kubernetes_api") -> None:
        if self.mode not in MODES:
            raise SpecError(f"{where}.mode", f"must be one of {', '.join(MODES)}")
        if self.server and not self.server.startswith("https://"):
            raise SpecError(f"{where}.server", f"'{self.server}' is not an https:// URL")
        if self.proxy and not self.proxy.startswith(("http://", "https://")):
            raise SpecError(f"{where}.proxy", f"'{self.proxy}' is not an http(s):// proxy URL")
        if self.timeout < 1:
            raise SpecError(f"{where}.timeout", "must be at least 1 second")


@dataclass
class KubernetesAccess:
    """The workload cluster as one run reaches it (or why it does not)."""

    settings: KubernetesApiSettings
    api: KubeApi | None = None
    etcd: Etcd | None = None
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.api is not None

    @classmethod
    def open(
        cls,
        ctx: Context,
        settings: KubernetesApiSettings,
        *,
        endpoint_host: str,
        endpoint_port: int,
        cluster_ca: Callable[[], tuple[str, str]],
        etcd_ca_certificate: str | None = None,
        etcd_ca_key: str | None = None,
    ) -> KubernetesAccess:
        """The clients of the API server (and of etcd, given its CA). Nothing is asked yet: the first read tells
        whether the API answers (:meth:`observe`, :meth:`unreachable`).

        ``cluster_ca()`` gives the cluster CA (certificate, key) when the first request goes out, so a run whose reads
        an earlier step handed on reads no PKI and mints no certificate (``ClusterPki.cluster_ca`` when it is read)."""
        if settings.mode == "none":
            return cls(settings, reason="kubernetes_api.mode is none")
        if not credentials.HAS_CRYPTOGRAPHY:
            raise ReconcileError("the Kubernetes side needs the 'cryptography' package on the controller")
        url = settings.server or f"https://{endpoint_host}:{endpoint_port}"
        # Reached at another address, the server is still checked for the endpoint's name.
        name = settings.tls_server_name or (endpoint_host if settings.server else None)
        target = ApiTarget(url, tls_server_name=name, proxy=settings.proxy)

        def trust() -> tuple[str, credentials.Identity | None]:
            certificate, key = cluster_ca()
            identity = credentials.mint_client_certificate(
                certificate, key, credentials.API_CLIENT_NAME, credentials.API_CLIENT_GROUPS
            )
            return certificate, identity

        api = KubeApi(
            target,
            count=ctx.session.recorder.count,
            timeout=settings.timeout,
            shared=ctx.session.shared,
            trust=trust,
        )
        etcd = None
        if etcd_ca_certificate and etcd_ca_key:
            etcd_identity = credentials.mint_client_certificate(
                etcd_ca_certificate, etcd_ca_key, credentials.ETCD_CLIENT_NAME
            )
            etcd = Etcd(api, etcd_ca_certificate, etcd_identity, count=ctx.session.recorder.count)
        return cls(settings, api=api, etcd=etcd)

    def unreachable(self, problem: str) -> Workload:
        """The API did not answer: ``required`` fails (before any change: the first read comes before any), the other
        modes go on without it for the rest of the run."""
        if self.settings.mode == "required":
            raise ReconcileError(
                f"kubernetes_api.mode is required but the Kubernetes API does not answer: {problem}. "
                "Give a reachable address in kubernetes_api.server (a tunnel or proxy to the API server), "
                "or set kubernetes_api.mode: auto"
            )
        self.close()
        self.api, self.etcd, self.reason = None, None, problem
        return Workload.unreachable(problem)

    def observe(self, control_plane_nodes: list[str] | None = None, *, again_later: bool = False) -> Workload:
        """Nodes, the control-plane static pods and (for a control plane) etcd: one read of each.

        ``again_later``: an API that does not answer is expected to come (a first control-plane machine still
        running ``kubeadm init``): the observation says so, and the next one asks again (no failure, even when
        required).
        """
        if self.api is None:
            return Workload.unreachable(self.reason)
        try:
            nodes = tuple(NodeView.from_api(n) for n in self.api.nodes())
            static: dict[str, dict[str, bool]] = {}
            status: EtcdStatus | None = None
            etcd_error = ""
            if control_plane_nodes is not None:
                pods = self.api.pods(CONTROL_PLANE_NAMESPACE, label_selector=CONTROL_PLANE_PODS)
                static = static_pods_of(pods)
                status, etcd_error = self._etcd_status(control_plane_nodes, static)
        except RemoteError as e:
            if e.code == UNREACHABLE:
                return Workload.unreachable(str(e)) if again_later else self.unreachable(str(e))
            raise ReconcileError(f"the Kubernetes API refused a read: {e}") from None
        return Workload(reachable=True, nodes=nodes, static_pods=static, etcd=status, etcd_error=etcd_error)

    def _etcd_status(self, nodes: list[str], static: dict[str, dict[str, bool]]) -> tuple[EtcdStatus | None, str]:
        if self.etcd is None:
            return None, "the etcd CA is not known"
        # Members whose etcd pod is ready first: the first that answers is the one asked.
        ordered = sorted(nodes, key=lambda n: not static.get(n, {}).get("etcd"))
        if not ordered:
            return None, "no control-plane node to reach etcd through"
        try:
            return self.etcd.health(self.etcd.status(ordered), ordered), ""
        except RemoteError as e:
            return None, str(e)

    def close(self) -> None:
        if self.etcd is not None:
            self.etcd.close()


def eks_kube_api(ctx: Context, settings: KubernetesApiSettings, name: str, cluster: Mapping[str, Any]) -> KubeApi:
    """A client of EKS cluster ``name``'s API server (``DescribeCluster``'s answer): its CA, a token of the run's
    credentials (presigned locally), and ``kubernetes_api``'s tunnel or proxy when set."""
    endpoint = cluster["endpoint"]
    ca = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
    host = urllib.parse.urlparse(endpoint).hostname or ""
    target = ApiTarget(
        settings.server or endpoint,
        ca,
        tls_server_name=settings.tls_server_name or (host if settings.server else None),
        proxy=settings.proxy,
    )
    token = credentials.eks_token(ctx.session.credentials(), ctx.region or "", name)
    return KubeApi(
        target, token=token, count=ctx.session.recorder.count, timeout=settings.timeout, shared=ctx.session.shared
    )


# EKS's IAM mapping ConfigMap (CAPA's IAMAuthenticatorConfigured keeps it).
AWS_AUTH_PATH = "/api/v1/namespaces/kube-system/configmaps/aws-auth"


def eks_role_mapped(
    api: KubeApi, cluster: Mapping[str, Any], role_name: str, access_entries: Callable[[], list[str]]
) -> bool:
    """Whether EKS cluster ``cluster`` (DescribeCluster's answer) maps the role ``role_name`` (of any path), so that
    nodes authenticating as it can join: in ``aws-auth``'s mapRoles unless the authentication mode is API, or as an
    access entry (``access_entries()``, asked only then) when it allows them. A Kubernetes API that does not answer
    raises :class:`RemoteError` (UNREACHABLE)."""
    mode = (cluster.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP"
    suffix = f"/{role_name}"
    if mode != "API":
        found = api.get(AWS_AUTH_PATH, "k8s:GetConfigMap") or {}
        roles = aws_auth_mappings((found.get("data") or {}).get("mapRoles"))
        if any(str(m.get("rolearn", "")).endswith(suffix) for m in roles):
            return True
    return mode != "CONFIG_MAP" and any(principal.endswith(suffix) for principal in access_entries())


def aws_auth_mappings(text: str | None) -> list[dict[str, Any]]:
    """The mappings of one aws-auth key (``mapRoles``, ``mapUsers``: a YAML list in a string); nothing else counts."""
    found = yaml.safe_load(text) if text and yaml is not None else None
    return [dict(m) for m in found if isinstance(m, Mapping)] if isinstance(found, list) else []
