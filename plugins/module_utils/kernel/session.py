# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: one boto3 session per module run, identities, retries and the API-call recorder.

Modules do not import this file; they use :mod:`capa` (the public facade).
"""

from __future__ import annotations

import collections
import functools
from typing import Any, Callable, Mapping

try:
    import boto3
    import botocore.config
    import botocore.exceptions
    import botocore.loaders
    import botocore.parsers
    import botocore.retries.standard
    import botocore.session
except ImportError:
    pass  # AnsibleAWSModule reports the missing SDK before any of this runs.

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry

from .shared_reads import SharedReads

# Codes CAPA retries with backoff because AWS is eventually consistent: a resource just created may not be
# visible to the next call yet (pkg/cloud/services/wait, awserrors). They are only retried on mutating calls:
# a describe by id that says NotFound is an answer, not a race.
EVENTUAL_CONSISTENCY_CODES = (
    "InvalidVpcID.NotFound",
    "InvalidSubnetID.NotFound",
    "InvalidGroup.NotFound",
    "InvalidRouteTableID.NotFound",
    "InvalidInternetGatewayID.NotFound",
    "InvalidNatGatewayID.NotFound",
    "InvalidGatewayID.NotFound",
    "InvalidResourceID.NotFound",
    "InvalidAllocationID.NotFound",
    "InvalidSubnet",
    "LoadBalancerNotFound",
    "InvalidIPAddress.InUse",
    "AuthFailure",
)

# Server-side throttling and transient failures, on every call (AWSRetry.found adds its own list on top).
TRANSIENT_CODES = (
    "RequestLimitExceeded",
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "SlowDown",
    "InternalError",
    "InternalFailure",
    "ServiceUnavailable",
    "Unavailable",
    "RequestTimeout",
    "RequestTimeoutException",
    "PriorRequestNotComplete",
    "ServerException",
    "ServiceUnavailableException",
    "ServiceFailure",
)

# IAM's Simulate* calls evaluate policies and change nothing either; S3's Head* calls are the bodiless Get*.
_READ_PREFIXES = ("Describe", "List", "Get", "Head", "Simulate")


def is_read_operation(operation: str) -> bool:
    """Describe/List/Get/Head/Simulate calls change nothing in AWS."""
    return operation.startswith(_READ_PREFIXES)


class ApiCallRecorder:
    """Counts every AWS request made through the session, per ``service:Operation``.

    ``service`` is boto3's client name (``ec2``, ``elb``, ``elbv2``, ``eks`` …), so the classic and v2 load
    balancer APIs, which share one endpoint, stay apart.

    It listens to botocore's ``before-parameter-build`` event, so it sees each call once per attempt that the
    retry decorator makes, pages of a paginator included, whichever client made it.
    """

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        # Calls answered by an earlier run's identical read (kernel/shared_reads.py) pass before-parameter-build
        # too, but send nothing: they are counted there and taken off here - as are those asked of the shared reads
        # alone that found nothing there (SharedReads.only_served: nothing was sent).
        self.served: collections.Counter[str] = collections.Counter()
        self.unsent: collections.Counter[str] = collections.Counter()

    def attach(self, session: Any) -> None:
        session.events.register("before-parameter-build", self._record)

    def _record(self, model: Any = None, **_kwargs: Any) -> None:
        if model is not None:
            self.counts[f"{model.service_model.service_name}:{model.name}"] += 1

    def count(self, name: str) -> None:
        """Count a request that is not an AWS call (``k8s:ListNodes``, ``etcd:ListMembers``): every request a run
        makes, to any endpoint, shows in ``api_calls``."""
        self.counts[name] += 1

    def as_dict(self) -> dict[str, int]:
        sent = self.counts - self.served - self.unsent
        return dict(sorted(sent.items()))

    def mutating(self) -> dict[str, int]:
        return {k: v for k, v in self.as_dict().items() if not is_read_operation(k.split(":", 1)[1])}


def is_lost_response(exc: BaseException) -> bool:
    """True when a request may have reached AWS but its answer did not come back (dropped or timed out).

    Such a request may have been applied: resending a create that carries no idempotency token can make a
    second resource, so writes are never resent blindly on these (see ``_idempotency``).
    """
    return isinstance(exc, (botocore.exceptions.ConnectionClosedError, botocore.exceptions.ReadTimeoutError))


def _retry_decorator(operation: str, retries: int, consistency: bool = True) -> Callable:
    extra = list(TRANSIENT_CODES)
    if consistency and not is_read_operation(operation):
        extra.extend(EVENTUAL_CONSISTENCY_CODES)
    backoff = AWSRetry.jittered_backoff(retries=retries, delay=1, max_delay=20, catch_extra_error_codes=extra)
    if not is_read_operation(operation):
        return backoff  # a write whose answer could not be read lost its answer: never resent blindly
    return lambda call: backoff(_unreadable_as_internal_error(call, operation))


def _unreadable_as_internal_error(call: Callable, operation: str) -> Callable:
    """A read answered with something botocore cannot parse - an HTML 5xx page from a proxy or a failing server,
    where AWS's own error would be XML or JSON - is a transient ``InternalError``: asked again like one, and
    reported as one (not as a traceback) when the retries run out."""

    @functools.wraps(call)
    def read(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except botocore.parsers.ResponseParserError as e:
            error = {"Error": {"Code": "InternalError", "Message": f"an answer that could not be read: {e}"}}
            raise botocore.exceptions.ClientError(error, operation) from None

    return read


class RetryingClient:
    """A boto3 client whose every operation retries throttling, 5xx and eventual-consistency codes.

    Unlike amazon.aws's ``RetryingBotoClientWrapper`` the retry is always on (no ``aws_retry=True`` to
    forget) and the codes depend on whether the call reads or writes.
    """

    def __init__(self, client: Any, retries: int = 8) -> None:
        self.raw = client
        self._retries = retries
        self._wrapped: dict[str, Callable] = {}

    @property
    def meta(self) -> Any:
        return self.raw.meta

    def api_name(self, method: str) -> str:
        return self.raw.meta.method_to_api_mapping[method]

    def __getattr__(self, method: str) -> Callable:
        if method in self._wrapped:
            return self._wrapped[method]
        attr = getattr(self.raw, method)
        if method not in self.raw.meta.method_to_api_mapping:
            return attr
        wrapped = _retry_decorator(self.api_name(method), self._retries)(attr)
        self._wrapped[method] = wrapped
        return wrapped

    def without_consistency_retry(self, method: str) -> Callable:
        """``method`` retried on throttling and 5xx only: a NotFound answer comes back at once.

        For the resend of a delete whose first answer was lost: there NotFound means the lost attempt did the
        work, and retrying it as eventual consistency would only resend the delete again and again (each resend
        one more chance to lose the answer).
        """
        return _retry_decorator(self.api_name(method), self._retries, consistency=False)(getattr(self.raw, method))

    def paginate(self, method: str, **params: Any) -> dict:
        """All pages of a list/describe call merged into one response (retried as a whole)."""
        if not self.raw.can_paginate(method):
            return getattr(self, method)(**params)

        def fetch() -> dict:
            return self.raw.get_paginator(method).paginate(**params).build_full_result()

        return _retry_decorator(self.api_name(method), self._retries)(fetch)()

    def waiter(self, name: str) -> Any:
        return self.raw.get_waiter(name)


def _client_config(user_agent: str, aws_config: Any) -> Any:
    # botocore's "standard" mode retries connection errors and 5xx with jittered exponential backoff at the
    # HTTP layer (but not a write whose answer was lost: see guard_writes); AWSRetry above adds the longer,
    # code-aware backoff.
    config = botocore.config.Config(user_agent_extra=user_agent, retries={"mode": "standard", "max_attempts": 4})
    if aws_config is not None:
        config = config.merge(aws_config)
    return config


# AWX's "Amazon Web Services" credential (and older tooling) hands temporary keys' token over as
# AWS_SECURITY_TOKEN, which amazon.aws 10 no longer reads: it would pass the keys from AWS_ACCESS_KEY_ID without
# their token, and AWS refuses temporary keys without one.
LEGACY_TOKEN_VARIABLES = ("AWS_SECURITY_TOKEN", "EC2_SECURITY_TOKEN")


def with_legacy_session_token(connect: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """``connect`` with the token of keys taken from the environment, when only a legacy variable carries it.

    Only for keys that came from ``AWS_ACCESS_KEY_ID``, and only while ``AWS_SESSION_TOKEN`` is not set at all:
    an empty ``AWS_SESSION_TOKEN`` says "these keys have no token".
    """
    if connect.get("aws_session_token") or connect.get("profile_name") or "AWS_SESSION_TOKEN" in environ:
        return connect
    key = connect.get("aws_access_key_id")
    if not key or key != environ.get("AWS_ACCESS_KEY_ID"):
        return connect
    for name in LEGACY_TOKEN_VARIABLES:
        if environ.get(name):
            return dict(connect, aws_session_token=environ[name])
    return connect


class IdentityRefused(Exception):
    """STS refused to let the caller assume a role of the identity chain (trust policy, external id, permissions)."""

    def __init__(self, role: dict[str, Any], error: Exception) -> None:
        self.role_arn = role["role_arn"]
        response = getattr(error, "response", {}) or {}
        self.code = response.get("Error", {}).get("Code", "")
        detail = response.get("Error", {}).get("Message", "") or str(error)
        given = "with an external id" if role.get("external_id") else "without an external id"
        super().__init__(
            f"could not assume role {self.role_arn} ({given}): AWS refused sts:AssumeRole"
            f"{' with ' + self.code if self.code else ''}: {detail}. The role's trust policy does not accept this "
            "caller, or its sts:ExternalId condition does not accept the external id given"
        )


def guard_writes(client: Any) -> Any:
    """Keep botocore from resending a write whose answer was lost; every other retry stays botocore's.

    botocore's standard retry resends any request after a dropped connection, a create without idempotency token
    included, which can make a second resource. Its retry handler is replaced by one that declines exactly that
    case, so the write's error reaches ``Operations.call`` (``_idempotency``), which knows how to resolve it.
    """
    if (client.meta.config.retries or {}).get("mode") != "standard":
        return client
    name = client.meta.service_model.service_id.hyphenize()
    attempts = client.meta.config.retries.get("total_max_attempts")
    client.meta.events.unregister(f"needs-retry.{name}", unique_id=f"retry-config-{name}")
    handler = botocore.retries.standard.register_retry_handler(client, max_attempts=attempts)
    client.meta.events.unregister(f"needs-retry.{name}", unique_id=f"retry-config-{name}")

    def needs_retry(**kwargs: Any) -> Any:
        operation = kwargs.get("operation")
        caught = kwargs.get("caught_exception")
        if caught is not None and is_lost_response(caught) and not is_read_operation(getattr(operation, "name", "")):
            return None
        return handler.needs_retry(**kwargs)

    client.meta.events.register(f"needs-retry.{name}", needs_retry, unique_id=f"retry-config-{name}")
    return client


# botocore reads a service's model (JSON; EC2's is megabytes) for every new session, and a module run makes one:
# about 0.1 s of each run. One loader per process, shared by every session, reads each file once - in a module process
# that changes nothing; where modules run in the controller (plugins/plugin_utils/in_process.py), the controller
# warms it once (warm_models) and every task's worker inherits the parsed models. botocore's loaded data is read-only
# to it (one session's clients share it the same way).
_LOADER: Any = None


def shared_loader() -> Any:
    global _LOADER
    if _LOADER is None:
        _LOADER = botocore.loaders.create_loader()
    return _LOADER


def new_session(**params: Any) -> Any:
    """A boto3 session on the process's shared model loader."""
    core = botocore.session.Session()
    core.register_component("data_loader", shared_loader())
    return boto3.session.Session(botocore_session=core, **params)


def warm_models(services: tuple[str, ...] = ("ec2",)) -> None:
    """Read the models every client of ``services`` needs (and the endpoint data) into the shared loader now, the
    paginators' too."""
    session = new_session(region_name="us-east-1", aws_access_key_id="warm", aws_secret_access_key="warm")
    for service in services:
        client = session.client(service)
        try:  # what a client's first can_paginate reads
            shared_loader().load_service_model(service, "paginators-1", client.meta.service_model.api_version)
        except botocore.exceptions.DataNotFoundError:
            pass  # a service without paginators


class AwsSession:
    """One boto3 session for a whole module run; every client comes from it and is recorded."""

    def __init__(
        self,
        region: str | None,
        endpoint_url: str | None,
        connect_params: dict[str, Any],
        user_agent: str = "clusterapi.aws",
    ) -> None:
        params = dict(connect_params)
        self.region = region
        self.endpoint_url = endpoint_url
        self._verify = params.pop("verify", None)
        self._config = _client_config(user_agent, params.pop("aws_config", None))
        self.recorder = ApiCallRecorder()
        self._session = new_session(**{k: v for k, v in params.items() if v is not None})
        self.recorder.attach(self._session)
        self._clients: dict[str, RetryingClient] = {}
        self.shared: SharedReads | None = None

    def share_reads(self, shared: SharedReads) -> None:
        """Answer reads from ``shared`` (an earlier run's identical requests) and record this run's for the next."""
        self.shared = shared
        self.recorder.served = shared.served
        self.recorder.unsent = shared.unsent
        shared.attach(self._session.events)

    def client(self, service: str, region: str | None = None) -> RetryingClient:
        """The run's client for ``service``; ``region`` other than the run's region is for multi-region reads."""
        key = service if region in (None, self.region) else f"{service}@{region}"
        if key not in self._clients:
            raw = self._session.client(
                service,
                region_name=region or self.region,
                endpoint_url=self.endpoint_url,
                verify=self._verify,
                config=self._config,
            )
            self._clients[key] = RetryingClient(guard_writes(raw))
        return self._clients[key]

    def credentials(self) -> Any:
        """The session's botocore credentials, for signing done locally (presigned URLs, EKS tokens)."""
        return self._session.get_credentials()

    def assume(self, identity: dict[str, Any], default_session_name: str) -> None:
        """Switch this session to a role, first through ``source_identity`` when chained.

        The STS calls are recorded like any other call; clients made before are dropped.
        """
        chain = []
        link: dict[str, Any] | None = identity
        while link:
            chain.append(link)
            link = link.get("source_identity")
        for role in reversed(chain):
            credentials = self._assume_role(role, default_session_name)
            self._session = new_session(
                aws_access_key_id=credentials["AccessKeyId"],
                aws_secret_access_key=credentials["SecretAccessKey"],
                aws_session_token=credentials["SessionToken"],
            )
            self.recorder.attach(self._session)
            if self.shared is not None:
                self.shared.attach(self._session.events)
            self._clients = {}

    def _assume_role(self, role: dict[str, Any], default_session_name: str) -> dict[str, Any]:
        request: dict[str, Any] = {
            "RoleArn": role["role_arn"],
            "RoleSessionName": role.get("session_name") or default_session_name,
            "DurationSeconds": role.get("duration_seconds") or 3600,
        }
        if role.get("external_id"):
            request["ExternalId"] = role["external_id"]
        try:
            return self.client("sts").assume_role(**request)["Credentials"]
        except botocore.exceptions.ClientError as e:
            raise IdentityRefused(role, e) from e
