# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: one machine, declared once - the options that describe it, its typed spec, and what AWS is sent for it.

Groups (``capa_instance``), pools (``capa_asg``) and fleets (``capa_fleet``) launch the same kind of machine: an
image, an instance type, a root volume, a key, a profile, security groups, instance metadata options, spot,
tenancy and a placement group, and a bootstrap document. :data:`MACHINE_OPTIONS` declares those options once
(:class:`..kernel.options.Option`: name, type, default, choices, description); each module takes them through its
own variant (:data:`INSTANCE_OPTIONS`, :data:`ASG_OPTIONS`, :data:`FLEET_OPTIONS`: the same options, some with a
module's own description or default, plus :data:`MODULE_OPTIONS`), and ``tools/gen_specs.py`` writes the doc
fragment ``clusterapi.aws.machine`` (its sections: :data:`DOC_FRAGMENTS`) from the same declaration.
:class:`MachineSpec` is the typed value built once from a module's parameters (:meth:`MachineSpec.from_params`,
every default read from the declaration), checked by :meth:`MachineSpec.validate` before any AWS call, and
rendered into the three requests that make machines: a
``RunInstances`` request (:meth:`MachineSpec.run_instances_request`), launch template data
(:meth:`MachineSpec.launch_template_data`) and EC2 Fleet overrides (:meth:`MachineSpec.fleet_overrides`).
``GroupSpec``, ``PoolSpec`` and ``FleetSpec`` embed a ``MachineSpec`` and keep only what is theirs (replicas and
rollout, sizes and refresh, capacities). The image is resolved in one place (``ami.resolve_image``) and the
bootstrap document rendered in one place (``node_bootstrap.NodeBootstrap``), for all three.

How the cluster spec (``cluster/cluster_spec.py``) consumes it: the machine fields of ``control_plane``,
``machine_deployments`` and ``machine_pools`` are :data:`MACHINE_OPTIONS` (or some of them, by name), with only
the cluster's documented defaults overridden - ``machine_options(defaults={"instance_type": "t3.large",
"root_volume.size": 80})`` does that with ``Option.but(default=...)`` along the dotted path - so a field's type,
choices and description stay the machine's. A cluster section is checked with the same rules as a module's
parameters: ``MachineSpec.from_params(section).validate(where="capa_cluster.control_plane")`` raises a
``SpecError`` whose field starts with ``where``. Nothing here imports more than the kernel's options and errors,
so the cluster spec (which runs in the controller) stays small.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..kernel import validation
from ..kernel.errors import SpecError
from ..kernel.options import Option, argument_spec, filled, given
from ..kernel.validation import at, check_one_of
from ..kubeadm import bootstrap_tokens as tokens

KUBEADM, EKS, RAW, NONE = "kubeadm", "eks", "raw", "none"
BOOTSTRAP_TYPES = (KUBEADM, EKS, RAW, NONE)
SECRETS_MANAGER, SSM = "secrets-manager", "ssm-parameter-store"
BACKENDS = (SECRETS_MANAGER, SSM)
ROLES = ("control-plane", "node", "bastion")
BASTION = "bastion"
BASTION_INSTANCE_TYPE = "t3.micro"
TENANCIES = ("default", "dedicated", "host")
HTTP_TOKENS = ("required", "optional")
HOP_LIMITS = (1, 64)
MIN_ROOT_VOLUME_GIB = 8
MAX_ROOT_VOLUME_GIB = 16384
# A spot max price in USD (AWS's SpotMarketOptions.MaxPrice is a decimal string).
PRICE = re.compile(r"^\d+(\.\d+)?$")
DEFAULT_ROOT_VOLUME_TYPE = "gp3"
# The EBS volume types a root volume can have (the cluster spec refuses others; the modules leave that to AWS).
ROOT_VOLUME_TYPES = ("standard", "gp2", DEFAULT_ROOT_VOLUME_TYPE, "io1", "io2")
# The image lookup's version forms: CAPA's lookup names images by full version, EKS publishes one line per minor.
VERSION = validation.KUBERNETES_VERSION
EKS_VERSION = re.compile(r"^v?(\d+\.\d+)(\.\d+)?$")
# Where a machine's (or a launch template version's) bootstrap entries are: ``<backend>:<prefix>:<count>``.
BOOTSTRAP_TAG = "clusterapi.aws/bootstrap-data"
# The fields of ``ami`` that ask for CAPA's lookup (or an image) instead of the EKS-optimised image.
AMI_CHOICE_FIELDS = ("id", "base_os", "owner", "name_format")


@dataclass(frozen=True)
class BootstrapRef:
    """Where one machine's bootstrap data is stored (the value of :data:`BOOTSTRAP_TAG`)."""

    backend: str
    prefix: str
    count: int

    def entry_names(self) -> list[str]:
        if self.backend == SSM:
            return [f"{self.prefix}/{i}" for i in range(self.count)]
        return [f"{self.prefix}-{i}" for i in range(self.count)]

    def tag_value(self) -> str:
        return f"{self.backend}:{self.prefix}:{self.count}"

    @classmethod
    def from_tag(cls, value: str | None) -> BootstrapRef | None:
        if not value:
            return None
        parts = value.split(":")
        if len(parts) != 3 or parts[0] not in BACKENDS or not parts[2].isdigit() or int(parts[2]) < 1:
            return None
        return cls(parts[0], parts[1], int(parts[2]))


# the declaration -------------------------------------------------------------------------------------------------
INSTANCE_TYPE = Option("instance_type", "EC2 instance type.")
# What a machine is; only capa_instance takes it (pools launch nodes).
ROLE = Option("role", "What the machines are.", default="node", choices=ROLES)
AMI = Option(
    "ami",
    "The machine image, or how to look it up - the newest available HVM image of the instance type's architecture.",
    type="dict",
    default={},
    options=(
        Option("id", "AMI id; no lookup when given."),
        Option(
            "base_os",
            "Base OS in the looked-up image name. Default C(ubuntu-24.04); with C(eks) bootstrap, leaving this, "
            "I(ami.owner) and I(ami.name_format) out picks the EKS-optimised image instead.",
        ),
        Option(
            "owner",
            "Owner account of the looked-up image. Default CAPA's C(819546954734) (for a bastion, Canonical's "
            "C(099720109477)).",
        ),
        Option(
            "name_format",
            [
                "Name pattern of the looked-up image, with the placeholders C({base_os}) and C({k8s_version}) (the "
                "version without its leading C(v); images named with or without the C(v) are both found). Default "
                "C(capa-ami-{base_os}-?{k8s_version}-*).",
                "CAPA's Go-template spelling with C(.BaseOS) and C(.K8sVersion) in double braces is understood too, "
                "but Ansible would template the braces - escape it with raw/endraw or use our placeholders.",
            ],
        ),
    ),
)
ROOT_VOLUME = Option(
    "root_volume",
    "Root volume. The device name comes from the AMI; the volume is deleted with the instance.",
    type="dict",
    default={},
    options=(
        Option("size", "Size in GiB (at least the AMI's); default the AMI's size.", type="int"),
        Option("type", "EBS volume type.", default=DEFAULT_ROOT_VOLUME_TYPE),
        Option(
            "encrypted", "Encrypt the volume (safer than CAPA, which leaves it to the AMI).", type="bool", default=True
        ),
    ),
)
SSH_KEY_NAME = Option("ssh_key_name", "EC2 key pair of the machines; none when empty.", no_log=False)
IAM_INSTANCE_PROFILE = Option(
    "iam_instance_profile",
    "Instance profile name (clusterawsadm's are C(control-plane.cluster-api-provider-aws.sigs.k8s.io) and "
    "C(nodes.cluster-api-provider-aws.sigs.k8s.io)). Machines with bootstrap data need C(GetSecretValue) (or "
    "C(GetParameter)) on their entries.",
)
SECURITY_GROUP_IDS = Option(
    "security_group_ids",
    "Security groups of the machines - the role's groups from M(clusterapi.aws.capa_security_group) plus any extra "
    "ones. Ids may be check-mode placeholders.",
    type="list",
    elements="str",
    default=[],
)
IMDS = Option(
    "imds",
    "Instance metadata service options (IMDSv2 required by default, safer than CAPA; the termination watcher speaks "
    "IMDSv2).",
    type="dict",
    default={},
    options=(
        Option("http_tokens", "C(required) means IMDSv2 only.", choices=HTTP_TOKENS, default="required"),
        Option(
            "http_put_response_hop_limit",
            f"Hop limit of metadata responses ({HOP_LIMITS[0]} to {HOP_LIMITS[1]}).",
            type="int",
            default=1,
        ),
    ),
)
SPOT_MARKET_OPTIONS = Option(
    "spot_market_options",
    "Run the machines as one-time spot instances that terminate on interruption.",
    type="dict",
    options=(Option("max_price", "Maximum price in USD per hour; empty means the on-demand price."),),
)
TENANCY = Option("tenancy", "Placement tenancy.", choices=TENANCIES, default="default")
PLACEMENT_GROUP_NAME = Option("placement_group_name", "Placement group to launch into.")
BOOTSTRAP = Option(
    "bootstrap",
    "The machines' bootstrap data.",
    type="dict",
    default={},
    options=(
        Option(
            "type",
            [
                "C(kubeadm) - kubeadm init/join cloud-init rendered from the cluster PKI that "
                "M(clusterapi.aws.capa_kubeadm) stored.",
                "C(eks) - a self-managed node of the EKS cluster I(bootstrap.eks_cluster_name).",
                "C(raw) - the document in I(bootstrap.data).",
                "C(none) - no user data.",
            ],
            choices=BOOTSTRAP_TYPES,
        ),
        Option("endpoint_host", "Host name of the Kubernetes API endpoint; kubeadm."),
        Option("endpoint_port", "Port of the Kubernetes API endpoint; kubeadm.", type="int", default=6443),
        Option("eks_cluster_name", "The EKS cluster the nodes join; eks. Default - I(cluster_name)."),
        Option("data", "The bootstrap document for C(raw). Never logged or returned.", no_log=True),
        Option("backend", "Where the document waits for the machine.", choices=BACKENDS, default=SECRETS_MANAGER),
        Option(
            "token_ttl",
            "Seconds the bootstrap token a kubeadm machine joins with stays valid (CABPK's C(--bootstrap-token-ttl)). "
            "Each machine gets a token of its own, minted in the cluster (a C(bootstrap.kubernetes.io/token) Secret "
            "with an expiry) through I(kubernetes_api) just before its launch; a later run renews it while the "
            "machine has not joined, and deletes it once it has. The first control-plane machine's C(kubeadm init) "
            "token expires after the same time. Between 300 and 604800.",
            type="int",
            default=tokens.DEFAULT_MACHINE_TTL,
            no_log=False,  # a lifetime in seconds, not the token
        ),
    ),
)

# What describes one machine, wherever it is launched from (a module, the cluster spec).
MACHINE_OPTIONS: tuple[Option, ...] = (
    INSTANCE_TYPE,
    AMI,
    ROOT_VOLUME,
    SSH_KEY_NAME,
    IAM_INSTANCE_PROFILE,
    SECURITY_GROUP_IDS,
    IMDS,
    SPOT_MARKET_OPTIONS,
    TENANCY,
    PLACEMENT_GROUP_NAME,
    BOOTSTRAP,
)

# What every machine module takes besides the machine: where it goes and what it runs (a cluster has these once).
SUBNETS = Option(
    "subnets",
    "The cluster's subnets as M(clusterapi.aws.capa_subnet) returns them; each needs C(id), C(availability_zone) "
    "and C(is_public) (other keys are ignored). Ids may be check-mode placeholders.",
    type="list",
    elements="dict",
    default=[],
)
KUBERNETES_VERSION = Option(
    "kubernetes_version",
    "Kubernetes version of the machines, e.g. C(v1.31.2). Used by the AMI lookup and by kubeadm bootstrap.",
)
MODULE_OPTIONS: tuple[Option, ...] = (SUBNETS, KUBERNETES_VERSION)


def changed(declared: Sequence[Option], path: str, **changes: Any) -> tuple[Option, ...]:
    """``declared`` with the option at the dotted ``path`` (``root_volume.size``) changed by ``Option.but``."""
    head, _dot, rest = path.partition(".")
    if head not in {o.name for o in declared}:
        raise KeyError(path)
    return tuple(
        (o.but(options=changed(o.options or (), rest, **changes)) if rest else o.but(**changes))
        if o.name == head
        else o
        for o in declared
    )


def without(options: Sequence[Option], path: str) -> tuple[Option, ...]:
    """``options`` without the one at the dotted ``path`` (``bootstrap.eks_cluster_name``)."""
    head, _dot, name = path.rpartition(".")
    if not head:
        return tuple(o for o in options if o.name != name)
    parent = find(options, head)
    return changed(options, head, options=tuple(o for o in parent.options or () if o.name != name))


def find(options: Sequence[Option], path: str) -> Option:
    """The option at the dotted ``path``."""
    head, _dot, rest = path.partition(".")
    option = next(o for o in options if o.name == head)
    return find(option.options or (), rest) if rest else option


def by_names(options: Sequence[Option], *names: str) -> tuple[Option, ...]:
    found = {o.name: o for o in options}
    return tuple(found[name] for name in names)


def machine_options(names: Sequence[str] = (), defaults: Mapping[str, Any] | None = None) -> tuple[Option, ...]:
    """:data:`MACHINE_OPTIONS` (or those ``names``), with the defaults at dotted paths replaced (the cluster spec)."""
    options = by_names(MACHINE_OPTIONS, *names) if names else MACHINE_OPTIONS
    for path, default in (defaults or {}).items():
        options = changed(options, path, default=default)
    return options


def revised(option: Option, changes: Mapping[str, Mapping[str, Any]], dropped: Sequence[str] = ()) -> Option:
    """``option`` with settings changed at paths inside it (``""``: the option itself, ``"type"``: its suboption)
    and the suboptions at ``dropped`` left out: a module's variant of a machine option."""
    declared: tuple[Option, ...] = (option,)
    for path, settings in changes.items():
        declared = changed(declared, f"{option.name}.{path}" if path else option.name, **settings)
    for path in dropped:
        declared = without(declared, f"{option.name}.{path}")
    return declared[0]


# Each module's variant: the options it takes, with its own wording where its machines differ.
POOL_BOOTSTRAP = revised(
    BOOTSTRAP,
    {
        "": dict(
            description="The pool machines' bootstrap data. Whatever the type, the document waits in Secrets Manager "
            "or SSM (one set of entries per launch template version); the launch template only carries a boot hook "
            "that fetches it."
        ),
        "type": dict(
            default=KUBEADM,
            description=[
                "C(kubeadm) - a kubeadm worker join rendered from the cluster PKI that M(clusterapi.aws.capa_kubeadm) "
                "stored.",
                "C(eks) - a self-managed node of the EKS cluster I(bootstrap.eks_cluster_name) - a C(#cloud-config) "
                "that writes a nodeadm C(NodeConfig) (API endpoint, CA, service CIDR, read with one "
                "C(DescribeCluster)) and runs C(nodeadm init). Unless I(ami) names an image or lookup fields, the "
                "image is the EKS-optimised Amazon Linux 2023 AMI of I(kubernetes_version) (C(1.31) or C(v1.31.2)) "
                "from AWS's public SSM parameter. The instance profile's role must be allowed into the cluster (an "
                "access entry of type C(EC2_LINUX), or an aws-auth mapping).",
                "C(raw) - the document in I(bootstrap.data) (the termination watcher is merged into a "
                "C(#cloud-config); other documents are used as they are).",
                "C(none) - no user data.",
            ],
        ),
        "backend": dict(description="Where each launch template version's document waits for the machines."),
        "token_ttl": dict(
            default=tokens.DEFAULT_POOL_TTL,
            description="Seconds the pool's kubeadm bootstrap token stays valid. A pool's instances join whenever "
            "the group launches them, so the pool has one token, minted in the cluster through I(kubernetes_api) "
            "and written only into the bootstrap entries (never the launch template); a run that finds less than "
            "half of it left rotates it - a new token in a new template version, no instance refresh - and the "
            "superseded one lapses. Choose it longer than twice the time between two runs (an AWX schedule): "
            "instances launched after it lapsed cannot join. Between 300 and 604800.",
        ),
    },
)
INSTANCE_BOOTSTRAP = revised(
    BOOTSTRAP,
    {
        "type": dict(
            choices=(KUBEADM, RAW, NONE),
            description=[
                "C(kubeadm) - kubeadm init/join cloud-init rendered from the cluster PKI that "
                "M(clusterapi.aws.capa_kubeadm) stored. In a control-plane group with no machine the first one runs "
                "C(kubeadm init) and later ones join as control planes; node groups join as workers.",
                "C(raw) - the cloud-init document in I(bootstrap.data).",
                "C(none) - no user data.",
                "Default C(none) for the bastion, C(kubeadm) otherwise.",
            ],
        ),
        "endpoint_host": dict(
            description="Host name of the Kubernetes API endpoint (the control-plane load balancer's DNS name); "
            "kubeadm."
        ),
        "data": dict(description="The cloud-init document for C(raw). Never logged or returned."),
        "backend": dict(
            description="Where the document waits for the machine. C(secrets-manager) - "
            "C(aws.cluster.x-k8s.io/<uuid>-<n>) secrets of 7000-byte gzip chunks. C(ssm-parameter-store) - "
            "C(/cluster.x-k8s.io/<uuid>/<n>) SecureString parameters of 4000-byte base64 chunks."
        ),
    },
    dropped=("eks_cluster_name",),
)
# Shared by the three modules (the doc fragment clusterapi.aws.machine).
COMMON_OPTIONS: tuple[Option, ...] = (
    *MODULE_OPTIONS,
    *by_names(MACHINE_OPTIONS, "ami", "root_volume", "ssh_key_name", "iam_instance_profile", "security_group_ids"),
    IMDS,
)
# Each module's own (the doc fragments clusterapi.aws.machine.instance, .asg, .fleet; the pools' bootstrap is
# clusterapi.aws.machine.pool_bootstrap).
INSTANCE_OWN_OPTIONS: tuple[Option, ...] = (
    INSTANCE_TYPE.but(description="EC2 instance type. Required except for the bastion (default C(t3.micro))."),
    SPOT_MARKET_OPTIONS,
    TENANCY,
    PLACEMENT_GROUP_NAME,
    INSTANCE_BOOTSTRAP,
)
ASG_OWN_OPTIONS: tuple[Option, ...] = (
    INSTANCE_TYPE.but(
        description="EC2 instance type of the template (with I(mixed_instances_policy), the overrides come first)."
    ),
    SPOT_MARKET_OPTIONS.but(
        description="Launch every instance as a one-time spot instance that terminates on interruption (launch "
        "template market options). Not with I(mixed_instances_policy), whose distribution decides spot there."
    ),
)
FLEET_OWN_OPTIONS: tuple[Option, ...] = (
    INSTANCE_TYPE.but(
        description="The launch template's own instance type (also picks the AMI architecture). Default the first "
        "of I(instance_types)."
    ),
)
INSTANCE_OPTIONS = COMMON_OPTIONS + INSTANCE_OWN_OPTIONS
ASG_OPTIONS = COMMON_OPTIONS + ASG_OWN_OPTIONS + (POOL_BOOTSTRAP,)
FLEET_OPTIONS = COMMON_OPTIONS + FLEET_OWN_OPTIONS + (POOL_BOOTSTRAP,)
# The doc fragment's sections (tools/gen_specs.py writes plugins/doc_fragments/machine.py from them).
DOC_FRAGMENTS: dict[str, tuple[Option, ...]] = {
    "DOCUMENTATION": COMMON_OPTIONS,
    "POOL_BOOTSTRAP": (POOL_BOOTSTRAP,),
    "INSTANCE": INSTANCE_OWN_OPTIONS,
    "ASG": ASG_OWN_OPTIONS,
    "FLEET": FLEET_OWN_OPTIONS,
}


def instance_argument_spec() -> dict[str, Any]:
    return argument_spec(INSTANCE_OPTIONS)


def asg_argument_spec() -> dict[str, Any]:
    return argument_spec(ASG_OPTIONS)


def fleet_argument_spec() -> dict[str, Any]:
    return argument_spec(FLEET_OPTIONS)


# parameters -> values ---------------------------------------------------------------------------------------------
_at = at


def check_machine_fields(
    volume_size: int | None,
    volume_type: str | None,
    hop_limit: int,
    spot_max_price: str | None,
    spot: bool,
    tenancy: str | None,
    where: str = "",
) -> None:
    """The rules of a machine's own fields, once: :meth:`MachineSpec.validate` checks a module's machine with them and
    the cluster spec each section's (its root volume, instance metadata and spot fields)."""
    low, high = MIN_ROOT_VOLUME_GIB, MAX_ROOT_VOLUME_GIB
    if volume_size is not None and not low <= volume_size <= high:
        raise SpecError(at(where, "root_volume.size"), f"{volume_size} GiB: a root volume is {low} to {high} GiB")
    if volume_type is not None:
        check_one_of(volume_type, ROOT_VOLUME_TYPES, at(where, "root_volume.type"))
    if not HOP_LIMITS[0] <= hop_limit <= HOP_LIMITS[1]:
        raise SpecError(
            at(where, "imds.http_put_response_hop_limit"), f"must be between {HOP_LIMITS[0]} and {HOP_LIMITS[1]}"
        )
    if spot_max_price is not None and not PRICE.match(spot_max_price):
        raise SpecError(at(where, "spot_market_options.max_price"), f"'{spot_max_price}' is not a price in USD")
    if spot and tenancy == "host":
        raise SpecError(at(where, "spot_market_options"), "spot instances cannot run on dedicated hosts (tenancy host)")


def eks_minor(kubernetes_version: str | None, field: str = "kubernetes_version") -> str:
    """``1.31`` for ``1.31``, ``v1.31`` or ``v1.31.2`` (EKS publishes one image line per minor)."""
    found = EKS_VERSION.match(kubernetes_version or "")
    if not found:
        raise SpecError(field, f"'{kubernetes_version}' is not a Kubernetes version like 1.31")
    return found.group(1)


@dataclass(frozen=True)
class Image:
    """The image a machine boots (``ami.resolve_image``): what the requests need of it."""

    id: str
    name: str
    root_device_name: str
    root_size: int | None
    architecture: str

    @classmethod
    def from_aws(cls, image: Mapping[str, Any]) -> Image:
        root = image.get("RootDeviceName") or "/dev/sda1"
        size = None
        for mapping in image.get("BlockDeviceMappings") or []:
            if mapping.get("DeviceName") == root and "Ebs" in mapping:
                size = mapping["Ebs"].get("VolumeSize")
        return cls(image["ImageId"], image.get("Name", ""), root, size, image.get("Architecture", "x86_64"))


@dataclass(frozen=True)
class Ami:
    id: str | None = None
    base_os: str | None = None
    owner: str | None = None
    name_format: str | None = None

    @property
    def chosen(self) -> bool:
        """An image or CAPA's lookup fields were given (so an EKS node does not take the EKS-optimised image)."""
        return any(getattr(self, name) for name in AMI_CHOICE_FIELDS)


@dataclass(frozen=True)
class RootVolume:
    size: int | None
    type: str
    encrypted: bool

    def as_dict(self) -> dict[str, Any]:
        return {"size": self.size, "type": self.type, "encrypted": self.encrypted}


@dataclass(frozen=True)
class Imds:
    http_tokens: str
    http_put_response_hop_limit: int

    def as_dict(self) -> dict[str, Any]:
        return {"http_tokens": self.http_tokens, "http_put_response_hop_limit": self.http_put_response_hop_limit}


@dataclass(frozen=True)
class Spot:
    max_price: str | None = None


@dataclass(frozen=True)
class Bootstrap:
    type: str
    endpoint_host: str | None
    endpoint_port: int
    data: str | None
    backend: str
    eks_cluster_name: str | None = None
    token_ttl: int = tokens.DEFAULT_MACHINE_TTL

    def definition(self, kubernetes_version: str | None) -> dict[str, Any]:
        """What of the bootstrap settings defines a machine (a digest of a raw document, never the document)."""
        found: dict[str, Any] = {"type": self.type}
        if self.type == KUBEADM:
            found.update(
                endpoint_host=self.endpoint_host,
                endpoint_port=self.endpoint_port,
                kubernetes_version=kubernetes_version,
            )
        elif self.type == EKS:
            found.update(eks_cluster_name=self.eks_cluster_name, kubernetes_version=kubernetes_version)
        elif self.type == RAW:
            found["data_sha256"] = hashlib.sha256((self.data or "").encode()).hexdigest()
        return found


@dataclass(frozen=True)
class MachineSpec:
    """One machine as plain values, every default resolved from the declaration (``None``: not set)."""

    role: str
    instance_type: str | None
    kubernetes_version: str | None
    ami: Ami
    root_volume: RootVolume
    ssh_key_name: str | None
    iam_instance_profile: str | None
    security_group_ids: tuple[str, ...]
    imds: Imds
    spot: Spot | None
    tenancy: str
    placement_group_name: str | None
    bootstrap: Bootstrap

    @classmethod
    def from_params(cls, params: Mapping[str, Any], bootstrap_option: Option = BOOTSTRAP) -> MachineSpec:
        """The machine of a module's parameters (or of a cluster spec section: the same keys).

        ``role`` (``capa_instance``'s; pools are nodes) decides the bastion's defaults: a small instance type,
        no bootstrap data, Canonical's Ubuntu image. ``bootstrap_option`` is the module's own declaration of
        ``bootstrap`` (a pool's token lives longer: :data:`POOL_BOOTSTRAP`).
        """
        role = filled(ROLE, params.get("role"))
        bastion = role == BASTION
        instance_type = given(params.get("instance_type"))
        if instance_type is None and bastion:
            instance_type = BASTION_INSTANCE_TYPE
        ami = filled(AMI, params.get("ami"))
        volume = filled(ROOT_VOLUME, params.get("root_volume"))
        imds = filled(IMDS, params.get("imds"))
        spot = filled(SPOT_MARKET_OPTIONS, params.get("spot_market_options"))
        bootstrap = filled(bootstrap_option, params.get("bootstrap"))
        return cls(
            role=role,
            instance_type=instance_type,
            kubernetes_version=given(params.get("kubernetes_version")),
            ami=Ami(**ami),
            root_volume=RootVolume(**volume),
            ssh_key_name=given(params.get("ssh_key_name")),
            iam_instance_profile=given(params.get("iam_instance_profile")),
            security_group_ids=tuple(filled(SECURITY_GROUP_IDS, params.get("security_group_ids"))),
            imds=Imds(**imds),
            spot=Spot(**spot) if spot is not None else None,
            tenancy=filled(TENANCY, params.get("tenancy")),
            placement_group_name=given(params.get("placement_group_name")),
            bootstrap=Bootstrap(**{**bootstrap, "type": bootstrap["type"] or (NONE if bastion else KUBEADM)}),
        )

    def but(self, **changes: Any) -> MachineSpec:
        return replace(self, **changes)

    @property
    def bastion(self) -> bool:
        return self.role == BASTION

    @property
    def uses_eks_image(self) -> bool:
        """EKS nodes take the EKS-optimised image unless the user chose an image or CAPA's lookup fields."""
        return self.bootstrap.type == EKS and not self.ami.chosen

    @property
    def has_bootstrap_data(self) -> bool:
        return self.bootstrap.type != NONE

    # validation (pure, before any AWS call) ------------------------------------------------------------------------
    def validate(self, where: str = "") -> None:
        """Raise a :class:`SpecError` naming the first field (prefixed by ``where``) a machine cannot be made with."""
        if not self.instance_type:
            raise SpecError(_at(where, "instance_type"), "is required")
        self._validate_image_inputs(where)
        check_machine_fields(
            self.root_volume.size,
            self.root_volume.type,
            self.imds.http_put_response_hop_limit,
            self.spot.max_price if self.spot else None,
            self.spot is not None,
            self.tenancy,
            where,
        )
        self._validate_bootstrap(where)

    def _validate_image_inputs(self, where: str) -> None:
        """An image can be found: an id, the bastion's Canonical image, or a version in the form the lookup needs."""
        if self.ami.id or self.bastion:
            return
        version = self.kubernetes_version
        field = _at(where, "kubernetes_version")
        if not version:
            raise SpecError(field, "is required to look up the AMI (or give ami.id)")
        if self.uses_eks_image:
            eks_minor(version, field)
        elif not VERSION.match(version):
            raise SpecError(field, f"'{version}' is not a version like v1.31.2")

    def _validate_bootstrap(self, where: str) -> None:
        bootstrap = self.bootstrap
        if bootstrap.type not in BOOTSTRAP_TYPES:
            raise SpecError(_at(where, "bootstrap.type"), f"must be one of {', '.join(BOOTSTRAP_TYPES)}")
        if bootstrap.type == KUBEADM:
            if self.bastion:
                raise SpecError(_at(where, "bootstrap.type"), "a bastion is not a Kubernetes node; use none or raw")
            if not bootstrap.endpoint_host:
                raise SpecError(
                    _at(where, "bootstrap.endpoint_host"), "is required for kubeadm bootstrap (the API endpoint)"
                )
            if not self.kubernetes_version:
                raise SpecError(_at(where, "kubernetes_version"), "is required for kubeadm bootstrap")
            tokens.check_token_ttl(bootstrap.token_ttl, _at(where, "bootstrap.token_ttl"))
        if bootstrap.type == EKS:
            if not self.kubernetes_version:
                raise SpecError(
                    _at(where, "kubernetes_version"), "is required for eks bootstrap (the EKS minor version)"
                )
            eks_minor(self.kubernetes_version, _at(where, "kubernetes_version"))
        if bootstrap.type == RAW and not bootstrap.data:
            raise SpecError(_at(where, "bootstrap.data"), "is required for raw bootstrap")
        if bootstrap.backend not in BACKENDS:
            raise SpecError(_at(where, "bootstrap.backend"), f"must be one of {', '.join(BACKENDS)}")

    # what defines a machine (its template hash) --------------------------------------------------------------------
    def definition(self, image_id: str) -> dict[str, Any]:
        """The image, type, volume, key, profile, groups and bootstrap settings: a change makes a new machine."""
        return {
            "ami_id": image_id,
            "instance_type": self.instance_type,
            "root_volume": self.root_volume.as_dict(),
            "ssh_key_name": self.ssh_key_name,
            "iam_instance_profile": self.iam_instance_profile,
            "security_group_ids": frozenset(self.security_group_ids),
            "bootstrap": self.bootstrap.definition(self.kubernetes_version),
        }

    def ami_lookup(self) -> dict[str, Any]:
        """The lookup that finds the machine's image when ``ami.id`` is not given, as the spec states it (a default
        the collection changes later is no change of the machine): CAPA's fields, or the EKS-optimised image."""
        return {
            "base_os": self.ami.base_os or "",
            "owner": self.ami.owner or "",
            "name_format": self.ami.name_format or "",
            "eks_optimized": self.uses_eks_image,
        }

    def market_and_placement(self) -> dict[str, Any]:
        """Spot, tenancy and placement group as a group's template hash has them (pools have none of them)."""
        return {
            "spot": {"max_price": self.spot.max_price or ""} if self.spot is not None else None,
            "tenancy": self.tenancy,
            "placement_group_name": self.placement_group_name,
        }

    # renderers ---------------------------------------------------------------------------------------------------
    def metadata_options(self) -> dict[str, Any]:
        return {
            "HttpTokens": self.imds.http_tokens,
            "HttpPutResponseHopLimit": self.imds.http_put_response_hop_limit,
            "HttpEndpoint": "enabled",
        }

    def market_options(self) -> dict[str, Any] | None:
        if self.spot is None:
            return None
        options: dict[str, Any] = {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}
        if self.spot.max_price:
            options["MaxPrice"] = str(self.spot.max_price)
        return {"MarketType": "spot", "SpotOptions": options}

    def block_device_mappings(self, image: Image) -> list[dict[str, Any]]:
        """The root volume on the image's root device (its size when none is given), deleted with the instance."""
        volume = {
            "VolumeSize": self.root_volume.size or image.root_size,
            "VolumeType": self.root_volume.type,
            "Encrypted": self.root_volume.encrypted,
            "DeleteOnTermination": True,
        }
        return [{"DeviceName": image.root_device_name, "Ebs": {k: v for k, v in volume.items() if v is not None}}]

    def run_instances_request(
        self, image: Image, *, zone: str, subnet_id: str, public_ip: bool, client_token: str
    ) -> dict[str, Any]:
        """One machine's ``RunInstances`` (its tags and user data are the group's to add)."""
        request: dict[str, Any] = {
            "ImageId": image.id,
            "InstanceType": self.instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "ClientToken": client_token,
            "BlockDeviceMappings": self.block_device_mappings(image),
            "MetadataOptions": self.metadata_options(),
        }
        groups = list(self.security_group_ids)
        if public_ip:
            request["NetworkInterfaces"] = [
                {
                    "DeviceIndex": 0,
                    "SubnetId": subnet_id,
                    "Groups": groups,
                    "AssociatePublicIpAddress": True,
                    "DeleteOnTermination": True,
                }
            ]
        else:
            request["SubnetId"] = subnet_id
            if groups:
                request["SecurityGroupIds"] = groups
        placement: dict[str, Any] = {"AvailabilityZone": zone}
        if self.tenancy != "default":
            placement["Tenancy"] = self.tenancy
        if self.placement_group_name:
            placement["GroupName"] = self.placement_group_name
        request["Placement"] = placement
        request.update(self._key_and_profile())
        market = self.market_options()
        if market:
            request["InstanceMarketOptions"] = market
        return request

    def launch_template_data(
        self, image: Image, *, tags: Mapping[str, str] | None = None, user_data: str | None = None
    ) -> dict[str, Any]:
        """A launch template version's data; ``tags`` go on its instances and volumes, ``user_data`` is the
        boot hook's MIME document (never the bootstrap document itself)."""
        data: dict[str, Any] = {
            "ImageId": image.id,
            "InstanceType": self.instance_type,
            "MetadataOptions": self.metadata_options(),
            "BlockDeviceMappings": self.block_device_mappings(image),
        }
        if tags is not None:
            listed = [{"Key": k, "Value": v} for k, v in tags.items()]
            data["TagSpecifications"] = [{"ResourceType": kind, "Tags": listed} for kind in ("instance", "volume")]
        data.update(self._key_and_profile())
        if self.security_group_ids:
            data["SecurityGroupIds"] = list(self.security_group_ids)
        market = self.market_options()
        if market:
            data["InstanceMarketOptions"] = market
        if user_data:
            data["UserData"] = base64.b64encode(user_data.encode()).decode()
        return data

    def fleet_overrides(
        self, subnets: Sequence[Mapping[str, Any]], instance_types: Sequence[str] = ()
    ) -> list[dict[str, str]]:
        """One override per instance type per subnet: the fleet may launch any of the types anywhere."""
        kinds = list(instance_types) or [self.instance_type or ""]
        return [{"InstanceType": kind, "SubnetId": subnet["id"]} for kind in kinds for subnet in subnets]

    def _key_and_profile(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.ssh_key_name:
            found["KeyName"] = self.ssh_key_name
        if self.iam_instance_profile:
            found["IamInstanceProfile"] = {"Name": self.iam_instance_profile}
        return found
