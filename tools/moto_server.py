"""Local moto server for the clusterapi.aws test harness.

Starts moto's WSGI application (``moto.moto_server.werkzeug_app.DomainDispatcherApplication``)
on 127.0.0.1 behind a request-counting middleware and runs in the foreground until SIGTERM or
SIGINT.  Usage::

    python tools/moto_server.py [--port N] [--host 127.0.0.1] [--pidfile F] [--urlfile F] [--verbose]

``--port 0`` (the default) binds a free port.  ``--urlfile`` receives ``http://127.0.0.1:PORT``
once the socket is bound (written atomically), ``--pidfile`` the process id; both are removed
again on a clean shutdown.

Environment set for moto before it is imported:

* ``MOTO_IAM_LOAD_MANAGED_POLICIES=true`` - AWS managed IAM policies (e.g.
  ``arn:aws:iam::aws:policy/AmazonEKSClusterPolicy``) exist, as in a real account.
* ``MOTO_AMIS_PATH=tools/moto_amis.json`` (unless already set) - CAPA-style published
  images (owner 819546954734, ``capa-ami-<os>-<k8s version>-<timestamp>``) and Canonical
  Ubuntu 24.04 images, instead of moto's default AMI list.

Request counter
---------------
Every request that reaches moto is recorded as ``{"service": ..., "operation": ...}``:

* query protocol (EC2, IAM, STS, ELB, ...): ``Action`` from the form body or query string,
  service from the SigV4 credential scope ``.../<region>/<service>/aws4_request``;
* JSON protocol: ``X-Amz-Target`` -> the part after the last dot;
* smithy rpc-v2-cbor: ``/service/<ServiceId>/operation/<Operation>``;
* REST protocols (EKS, S3, ...): method + path matched against botocore's service model
  (``requestUri`` templates); when no operation matches, ``"METHOD /path"``.

Each record also carries ``"time"``: the wall-clock arrival time (``time.time()``, seconds since the
epoch), so a test can order moto's requests against other journals kept on the same clock (the
workload-cluster simulator's, tools/kubesim).

``GET /_capa/requests`` returns the records (JSON list, in arrival order);
``POST /_capa/requests/reset`` clears them.  ``GET /_capa/generation`` returns ``{"generation": N}``, a number that
grows with every request that may change state (an operation not named Describe/List/Get/Simulate, from anyone but an
observer, and every ``/moto-api/`` POST such as a reset): the simulator re-reads the instances only when it moved, so
an idle suite does not spend its CPU on polls that can find nothing new.  Neither ``/_capa/`` nor ``/moto-api/``
requests are recorded, and neither are requests carrying the header ``X-Capa-Observer`` (the harness's own
observers, e.g. the simulator reading ``DescribeInstances`` to see instances boot: no
real AWS account sees those calls, and they would swamp the counts tests assert).

moto fixes (monkeypatches applied at start-up; each makes moto answer as AWS does, none makes
it more lenient than AWS)
---------------------------------------------------------------------------------------------
1. Security group rules for a numeric IP protocol other than tcp(6)/udp(17)/icmp(1)/icmpv6(58)
   without ports - e.g. IP-in-IP ``IpProtocol=4``, which CAPA's default Calico rule uses.
   AWS accepts such a rule, ignores ports for it and returns it from DescribeSecurityGroups as
   ``{"IpProtocol": "4", ...}`` with no ``FromPort``/``ToPort``.  moto 5.x crashes with HTTP 500
   (``int(None)`` in ``SecurityGroupBackend._sg_rule_id``/``SecurityRule`` handling of
   ``from_port``/``to_port``) on authorize and revoke.  The patch normalises from/to port to
   ``None`` for such protocols before moto's own code runs and makes the rule model tolerate
   missing ports, so the rule is stored, described without ports, and can be revoked.  The
   response serialiser already omits ``None`` ports.  tcp/udp/icmp still require ports exactly
   as moto enforced before (no change for them).
2. Under IAM enforcement (``INITIAL_NO_AUTH_ACTION_COUNT``, or ``POST /moto-api/reset-auth``) moto
   re-computes each request's SigV4 signature.  For bodiless REST requests (EKS ``GET /clusters/...``,
   ``DELETE ...``) it hashes its own parsed request data (the header dict) as the payload instead of the
   empty body, so every such request fails with ``SignatureDoesNotMatch``.  AWS hashes the raw body: the
   patch makes moto do that for requests without a body.
3. Under IAM enforcement moto names the action ``<SigV4 signing name>:<Operation>``.  For the Resource Groups
   Tagging API the signing name is ``tagging`` but the IAM action prefix is ``tag`` (``tag:GetResources``), so
   a policy allowing ``tag:GetResources`` was refused.  The patch maps the signing name to the IAM prefix.
4. Under IAM enforcement moto evaluates every Secrets Manager and SSM action against the resource ``*``, so a
   statement scoped to secret or parameter ARNs (as CAPA's policies are) never matches and the call is
   refused.  AWS evaluates the secret's / parameter's ARN: the patch gives moto that resource (from
   ``SecretId``/``Name``, or the first of ``Names``), so a scoped statement allows exactly what AWS allows.
   Likewise an IAM role action on a role that does not exist yet (``GetRole`` answering ``NoSuchEntity``,
   ``CreateRole``) is evaluated against ``*`` instead of ``arn:aws:iam::<account>:role<path><name>``, and
   ``SimulatePrincipalPolicy`` against ``*`` instead of the principal simulated (``PolicySourceArn``).
5. ``sts:AssumeRole`` and the role's trust policy: without IAM enforcement moto never reads the trust policy,
   and with it a missing ``ExternalId`` passes a ``sts:ExternalId`` condition.  AWS refuses the call with
   ``AccessDenied`` ("User: <caller> is not authorized to perform: sts:AssumeRole on resource: <role>") when
   no Allow statement of the role's trust policy accepts the request's external id.  The patch checks the
   ``sts:ExternalId`` conditions (``StringEquals``/``StringLike``) of the trust policy of an existing role
   on every AssumeRole; principals and other condition keys are still not evaluated (as before).
6. AWS's public SSM parameters of the EKS-optimised Amazon Linux 2023 images,
   ``/aws/service/eks/optimized-ami/<minor>/amazon-linux-2023/<arch>/standard/recommended/image_id``
   (moto serves the ``ami-amazon-linux-latest`` and ECS trees, not the EKS one).  They are
   derived from the ``amazon-eks-node-al2023-<arch>-standard-<minor>-v<date>`` images of
   ``MOTO_AMIS_PATH`` (owner 602401143452, Amazon's EKS account): the newest image per minor and
   architecture, loaded lazily the first time a name under ``/aws/service/eks/`` is read, as moto
   loads its other public trees.  Reserved ``/aws/`` names stay read-only, as on AWS.
7. Idempotency tokens (``ClientTokenCache``): AWS answers a repeated create carrying the same
   ``ClientToken`` / ``clientRequestToken`` and parameters with the first answer; moto ignores the
   tokens and creates a duplicate.  A WSGI layer replays the first answer (see the class).

8. EKS ``CreateCluster``: AWS gives every cluster its own certificate authority - ``certificateAuthority.data``
   is the base64 of a PEM CA certificate whose key signs the cluster API server's serving certificate - and its
   own endpoint ``https://<32 hex>.<3 chars>.<region>.eks.amazonaws.com``. moto returns 1400 random characters
   (no certificate at all) and one endpoint for every cluster of a region (computed once at import). The patch
   makes a real CA (RSA 2048, CN ``kubernetes``, 10 years, like EKS's) and a unique endpoint per cluster. The CA
   key, which AWS keeps inside the EKS control plane, is handed only to the harness's workload-cluster simulator
   through ``GET /_capa/eks/clusters`` (``[{"arn", "name", "region", "endpoint", "ca_cert", "ca_key",
   "creator_arn"}]``; ``creator_arn`` is the caller of CreateCluster, whom EKS makes cluster admin) so it can
   serve that cluster's API server with a certificate from that CA. Nothing becomes more lenient.

9. Presigned URLs (SigV4 in the query string: ``X-Amz-Credential=<key>/<date>/<region>/<service>/aws4_request``)
   without an ``Authorization`` header. AWS routes them by host (``sts.<region>.amazonaws.com``); moto's server
   ignores the host and guesses from body and path, so a presigned STS ``GetCallerIdentity`` - the URL inside every
   EKS bearer token, which aws-iam-authenticator calls - landed in S3 and answered ``ListAllMyBuckets``. The patch
   makes the dispatcher take the service and region from the query's credential scope, as it already does from an
   ``Authorization`` header, and makes the caller the access key of ``X-Amz-Credential`` (moto read only the header
   and SigV2's ``AWSAccessKeyId``, so every presigned caller was its default identity). The request is then
   answered by the service it was signed for, for the identity that signed it; nothing else changes.

10. The Resource Groups Tagging API's ``GetResources`` lists EKS clusters and managed node groups (resource types
    ``eks:cluster``, ``eks:nodegroup``), as AWS does; moto's EKS backend takes no part in the tagging API, so a
    read of what a cluster owns missed them. The patch adds them (ARN and tags as ``DescribeCluster`` /
    ``DescribeNodegroup`` return them); nothing else is listed that was not before.
11. EKS ``DescribeClusterVersions`` (``GET /cluster-versions``): moto does not implement it (HTTP 404). A WSGI
    layer (``EksClusterVersions``) answers it from :data:`EKS_CLUSTER_VERSIONS` - the versions AWS offers for new
    clusters, in standard or extended support, with their dates and status - honouring ``clusterVersions``,
    ``status``, ``defaultOnly`` and pagination (``maxResults``/``nextToken``) - and, under IAM enforcement, refusing
    a caller whose policies do not allow ``eks:DescribeClusterVersions`` as moto refuses its own operations.
12. Service Quotas ``GetServiceQuota``: moto knows only the ``vpc`` service's defaults; AWS answers for every
    service. The patch serves AWS's default values for the EC2 (Elastic IPs, Running On-Demand and Spot standard
    vCPUs) and Elastic Load Balancing quotas of :data:`SERVICE_QUOTA_DEFAULTS` too, and, like an account whose
    quota was lowered or raised, the applied values a test posts to ``/_capa/quotas`` (``{"region", "service",
    "code", "value"}``; ``DELETE /_capa/quotas`` forgets them, as ``/moto-api/reset`` does). A quota neither
    knows still answers ``NoSuchResourceException``.
13. IAM ``SimulatePrincipalPolicy``: moto does not implement it. The patch answers it as IAM's policy simulator does
    for the identity-based policies of a user (inline, attached, and those of its groups) or a role (inline and
    attached): per action and resource (``ResourceArns``, default ``*``), ``explicitDeny`` when a matching Deny
    statement applies, ``allowed`` when a matching Allow statement does, else ``implicitDeny``; a statement with a
    ``Condition`` is not applied and its context keys are listed in ``MissingContextValues`` (the simulator's answer
    when the caller gives no context entries). Action and resource patterns match as moto's enforcement matches
    them. A principal that does not exist answers ``NoSuchEntity``; ``Marker``/``MaxItems`` paginate. While IAM is
    not enforced (the server's default) every action is ``allowed``, as every request then is.
14. Speed, not answers: moto finds the account of a request's access key by asking the IAM backend of every
    partition (``aws``, ``aws-cn``, ``aws-us-gov``, ...), which creates each of them, and every IAM backend builds
    its 1,582 AWS managed policies from moto's 4.7 MB JSON - after every ``/moto-api/reset``, about 1.7 CPU-seconds,
    most of the suite's moto time. The lookup now skips partitions whose backend does not exist yet (an access key
    lives only in a backend that was created), and the JSON is parsed once per server (each backend still builds its
    own policy objects). Same answers, same policies.

15. EKS ``CreateCluster`` takes time on AWS (about ten minutes of ``CREATING``); moto makes a cluster ``ACTIVE`` at
    once. Off by default; ``POST /_capa/eks/delay {"create_seconds": N}`` makes every cluster created afterwards
    answer ``CREATING`` (in CreateCluster's and DescribeCluster's answers, and to moto's own "is the cluster
    ACTIVE" checks) for its first N seconds, then ``ACTIVE``; ``GET /_capa/eks/delay`` returns the setting,
    ``{"create_seconds": 0}`` or ``/moto-api/reset`` turns it off. Tests of long waits use it (the progress a run
    shows while it waits).

16. The AWS latency model: AWS resources take time in their intermediate states; moto settles them at once. While the
    model is on, a resource made or changed reports AWS's intermediate state for the time of
    :data:`aws_latencies.LATENCIES` (tools/aws_latencies.py, the one table, with sources; BENCHMARKS.md prints it)
    multiplied by one scale: instances ``pending`` -> ``running`` and ``shutting-down`` -> ``terminated`` (with their
    state codes), NAT gateways ``pending`` -> ``available`` and ``deleting`` -> ``deleted``, ELBv2 load balancers
    ``provisioning`` -> ``active``, EKS clusters, node groups and Fargate profiles ``CREATING`` -> ``ACTIVE`` and, once
    deleted, ``DELETING`` -> gone (still listed and described meanwhile; a cluster whose node group is deleting cannot
    be deleted yet), Auto Scaling instances ``Pending`` -> ``InService`` while their instance is pending; an Elastic IP
    of a NAT gateway that is still ``deleting`` cannot be released (``AuthFailure``); a security group or subnet that
    an instance not yet ``terminated`` uses, or a subnet with a NAT gateway not yet ``deleted``, cannot be deleted
    (``DependencyViolation``: their network interfaces hold them on AWS). moto's objects keep and end in
    moto's own states (the patched attributes are properties over moto's value; every filter and moto check reads what
    AWS would report, except ELBv2 target registration, which AWS allows for pending instances). The delay is fixed when
    a state is set, at the scale then in force. Off by default (scale 0: everything at once, as before); ``POST
    /_capa/latency {"scale": 0.0333}`` turns it on (1/30 of AWS's time), ``{"scale": 0}`` off, ``GET /_capa/latency``
    returns it; the environment variable ``CAPA_AWS_LATENCY_SCALE`` sets it at start, and ``/moto-api/reset`` returns to
    that. Fix 15's delay is the floor of an EKS cluster's modelled CREATING time.

17. An instance launched from a launch template (``RunInstances`` with ``LaunchTemplate``, and an Auto Scaling
    group's launches) carries the template's ``IamInstanceProfile`` on AWS; moto associates a profile only when the
    ``RunInstances`` request itself names one, so an auto scaling group's instances had none. The template's profile
    (by name or ARN) is now associated with every instance such a launch made, unless the request named its own.
    (EC2 Fleet's launches still carry none: moto's fleet launches without the template.)

18. EKS version updates: moto has no ``UpdateClusterVersion``, ``UpdateNodegroupVersion``, ``DescribeUpdate`` or
    ``ListUpdates`` (HTTP 404). A WSGI layer (``EksUpdates``) answers them on moto's own clusters and node groups as
    EKS does: one minor version up at a time (else ``InvalidParameterException``), one update at a time and only on
    an ``ACTIVE`` cluster or node group (else ``ResourceInUseException``); the update is ``InProgress`` and its cluster
    or node group ``UPDATING`` for the latency model's time (fix 16: ``eks_cluster``/``update``, ``eks_nodegroup``/
    ``update`` per node at ``maxUnavailable``), then ``Successful`` with the new version and ``ACTIVE``. With the
    model off an update settles by the next request, as a fast AWS update would.

19. Classic load balancers in the tagging API: AWS's ``GetResources`` files them, as the v2 ones, under the resource
    type ``elasticloadbalancing:loadbalancer`` (ARN ``...:loadbalancer/<name>``); moto files them under
    ``elb:loadbalancer``, so a ``ResourceTypeFilters`` of AWS's type never found one. The type is now AWS's.

20. Elastic IPs and launch templates in the tagging API: AWS's ``GetResources`` lists them (resource types
    ``ec2:elastic-ip``, ARN ``...:elastic-ip/<allocation id>``, and ``ec2:launch-template``, ARN
    ``...:launch-template/<id>``); moto's EC2 backend leaves both out of what it walks.

Fault injection (tests only)
----------------------------
``FaultInjector`` sits in front of everything and is off until a test posts a configuration to
``/_capa/faults``: seeded throttling errors and 5xx answers in each protocol's format, responses
dropped after moto applied the request, and SIGKILL of a process group at chosen request numbers.
``GET /_capa/faults`` returns its counters.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import re
import signal
import sys
import threading
import time
import urllib.parse
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs

# The latency model's one table (fix 16) and its timing rules.
from aws_latencies import LATENCIES, Clock, parse_scale, reported_state, scaled_seconds

# Operations that never change state: the one rule of moto_ctl.py --mutating, the fault injector and the generation.
from moto_ctl import READ_ONLY_PREFIXES

HERE = Path(__file__).resolve().parent

os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"
if (HERE / "moto_amis.json").is_file():
    os.environ.setdefault("MOTO_AMIS_PATH", str(HERE / "moto_amis.json"))
# Moto derives a few internal URLs from MOTO_PORT; main() sets it to the bound port.

CAPA_PREFIX = "/_capa/"
_CRED_RE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/,\s]+)/([^/,\s]+)/aws4_request")


# --------------------------------------------------------------------------------------
# request classification
# --------------------------------------------------------------------------------------
# (method, path regex, required query keys, required headers (lower case), specificity, operation)
_RestOp = tuple[str, "re.Pattern[str]", set[str], set[str], int, str]


class _RestOperationIndex:
    """Maps (signing name, method, path, query, headers) to an operation name using botocore models.

    The model named like the signing name (``eks``, ``s3``) is tried first; all REST models are
    indexed only when that finds nothing (loading every model takes a few seconds).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loader: Any = None
        self._direct: dict[str, dict[str, list[_RestOp]]] = {}
        self._full: dict[str, list[_RestOp]] | None = None

    def _get_loader(self) -> Any:
        if self._loader is None:
            import botocore.session

            self._loader = botocore.session.get_session().get_component("data_loader")
        return self._loader

    @staticmethod
    def _index_model(model: dict[str, Any], service: str, index: dict[str, list[_RestOp]]) -> None:
        meta = model.get("metadata", {})
        if meta.get("protocol") not in ("rest-json", "rest-xml"):
            return
        names = {meta.get("signingName") or meta.get("endpointPrefix") or service, meta.get("endpointPrefix")}
        for op_name, op in model.get("operations", {}).items():
            http = op.get("http", {})
            uri = http.get("requestUri", "/")
            method = http.get("method", "POST").upper()
            path_tpl, query_tpl = (uri.split("?", 1) + [""])[:2]
            pattern = ""
            literal = 0
            for part in re.split(r"(\{[^}]+\})", path_tpl):
                if part.startswith("{") and part.endswith("}"):
                    pattern += ".+" if part.endswith("+}") else "[^/]+"
                else:
                    pattern += re.escape(part)
                    literal += len(part)
            regex = re.compile(f"^{pattern}/?$")
            qkeys = {q.split("=", 1)[0] for q in query_tpl.split("&") if q}
            headers: set[str] = set()
            shape = model.get("shapes", {}).get(op.get("input", {}).get("shape", ""), {})
            for member in shape.get("required", []):
                spec = shape.get("members", {}).get(member, {})
                if spec.get("location") == "header":
                    headers.add(spec.get("locationName", member).lower())
                elif spec.get("location") == "querystring":
                    qkeys.add(spec.get("locationName", member))
            score = literal + 100 * (len(qkeys) + len(headers))
            for name in filter(None, names):
                index.setdefault(name, []).append((method, regex, qkeys, headers, score, op_name))

    def _direct_index(self, signing_name: str) -> list[_RestOp]:
        if signing_name not in self._direct:
            index: dict[str, list[_RestOp]] = {}
            try:
                model = self._get_loader().load_service_model(signing_name, "service-2")
            except Exception:
                model = {}
            self._index_model(model, signing_name, index)
            self._direct[signing_name] = index
        return self._direct[signing_name].get(signing_name, [])

    def _full_index(self, signing_name: str) -> list[_RestOp]:
        if self._full is None:
            index: dict[str, list[_RestOp]] = {}
            loader = self._get_loader()
            for service in loader.list_available_services("service-2"):
                try:
                    self._index_model(loader.load_service_model(service, "service-2"), service, index)
                except Exception:  # pragma: no cover - broken model files
                    continue
            self._full = index
        return self._full.get(signing_name, [])

    @staticmethod
    def _match(
        candidates: list[_RestOp], method: str, path: str, present: set[str], header_names: set[str]
    ) -> str | None:
        best: tuple[int, str] | None = None
        for op_method, regex, qkeys, headers, score, op_name in candidates:
            if op_method != method or not regex.match(path) or not qkeys <= present or not headers <= header_names:
                continue
            if best is None or score > best[0]:
                best = (score, op_name)
        return best[1] if best else None

    def lookup(self, signing_name: str, method: str, path: str, query: str, header_names: set[str]) -> str | None:
        present = set(parse_qs(query, keep_blank_values=True))
        with self._lock:
            found = self._match(self._direct_index(signing_name), method, path, present, header_names)
            if found is None:
                found = self._match(self._full_index(signing_name), method, path, present, header_names)
        return found


_REST_INDEX = _RestOperationIndex()


def _read_form_body(environ: dict[str, Any]) -> str:
    """Read (and put back) a url-encoded request body."""
    if not environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        return ""
    return _read_body(environ).decode("utf-8", "replace")


def classify(environ: dict[str, Any]) -> dict[str, str]:
    """Return ``{"service": ..., "operation": ...}`` for one WSGI request."""
    method = environ.get("REQUEST_METHOD", "GET").upper()
    path = environ.get("PATH_INFO", "") or "/"
    query = environ.get("QUERY_STRING", "")

    service = ""
    match = _CRED_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if not match:
        qcred = parse_qs(query).get("X-Amz-Credential", [""])[0]
        match = re.search(r"^[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request", qcred)
    if match:
        service = match.group(2)

    target = environ.get("HTTP_X_AMZ_TARGET", "")
    if target:
        return {"service": service or target.split(".", 1)[0], "operation": target.rsplit(".", 1)[-1]}

    cbor = re.match(r"^/service/([^/]+)/operation/([^/]+)$", path)
    if cbor:
        return {"service": service or cbor.group(1), "operation": cbor.group(2)}

    action = parse_qs(query).get("Action", [None])[0]
    if action is None:
        action = parse_qs(_read_form_body(environ)).get("Action", [None])[0]
    if action:
        return {"service": service, "operation": action}

    operation = None
    if service:
        header_names = {k[5:].replace("_", "-").lower() for k in environ if k.startswith("HTTP_")}
        header_names |= {k.replace("_", "-").lower() for k in ("CONTENT_TYPE", "CONTENT_LENGTH") if k in environ}
        # Match on the raw (still percent-encoded) path: a label such as an ARN may contain an encoded "/".
        raw_path = (environ.get("RAW_URI") or environ.get("REQUEST_URI") or "").split("?", 1)[0]
        raw_path = re.sub(r"^[a-z]+://[^/]*", "", raw_path) or path
        operation = _REST_INDEX.lookup(service, method, raw_path, query, header_names)
        if operation is None and raw_path != path:
            operation = _REST_INDEX.lookup(service, method, path, query, header_names)
    return {"service": service, "operation": operation or f"{method} {path}"}


class RequestCounter:
    """WSGI middleware recording every AWS API request before handing it to moto."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []
        self.generation = 0  # grows with every request that may change state (``GET /_capa/generation``)

    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._records)

    def reset(self) -> None:
        with self._lock:
            self._records.clear()

    @staticmethod
    def _json(start_response: Any, status: str, payload: Any) -> list[bytes]:
        body = json.dumps(payload).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET").upper()
        if path.startswith(CAPA_PREFIX):
            if path.rstrip("/") == "/_capa/requests" and method == "GET":
                return self._json(start_response, "200 OK", self.records())
            if path.rstrip("/") == "/_capa/generation" and method == "GET":
                return self._json(start_response, "200 OK", {"generation": self.generation})
            if path.rstrip("/") == "/_capa/requests/reset" and method == "POST":
                self.reset()
                return self._json(start_response, "200 OK", {"reset": True})
            if path.rstrip("/") == "/_capa/quotas" and method == "POST":
                try:
                    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
                    return self._json(start_response, "200 OK", set_applied_quota(body))
                except (KeyError, TypeError, ValueError) as exc:
                    return self._json(start_response, "400 Bad Request", {"error": f"quota: {exc}"})
            if path.rstrip("/") == "/_capa/quotas" and method == "DELETE":
                forget_applied_quotas()
                return self._json(start_response, "200 OK", {"reset": True})
            if path.rstrip("/") == "/_capa/eks/delay" and method == "POST":
                try:
                    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
                    return self._json(start_response, "200 OK", set_eks_create_delay(body))
                except (KeyError, TypeError, ValueError) as exc:
                    return self._json(start_response, "400 Bad Request", {"error": f"eks delay: {exc}"})
            if path.rstrip("/") == "/_capa/latency" and method == "POST":
                try:
                    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
                    return self._json(start_response, "200 OK", set_latency(body))
                except (KeyError, TypeError, ValueError) as exc:
                    return self._json(start_response, "400 Bad Request", {"error": f"latency: {exc}"})
            if path.rstrip("/") == "/_capa/latency" and method == "GET":
                return self._json(start_response, "200 OK", dict(LATENCY))
            if path.rstrip("/") == "/_capa/eks/delay" and method == "GET":
                return self._json(start_response, "200 OK", dict(EKS_CREATE_DELAY))
            if path.rstrip("/") == "/_capa/eks/clusters" and method == "GET":
                with _EKS_LOCK:
                    return self._json(start_response, "200 OK", list(EKS_CLUSTERS.values()))
            return self._json(start_response, "404 Not Found", {"error": f"unknown endpoint {method} {path}"})
        if path.startswith("/moto-api/reset"):
            with _EKS_LOCK:
                EKS_CLUSTERS.clear()
            forget_applied_quotas()
            set_eks_create_delay({"create_seconds": 0})
            set_latency({"scale": LATENCY_AT_START})
        changes = path.startswith("/moto-api") and method == "POST"
        if not path.startswith("/moto-api") and path != "/favicon.ico" and not environ.get("HTTP_X_CAPA_OBSERVER"):
            arrived = time.time()
            try:
                record: dict[str, Any] = classify(environ)
            except Exception as exc:  # never let the counter break a request
                record = {"service": "", "operation": f"{method} {path} (unclassified: {exc})"}
            record["time"] = arrived
            with self._lock:
                self._records.append(record)
            changes = not str(record.get("operation", "")).startswith(READ_ONLY_PREFIXES)
        answer = self.app(environ, start_response)
        if changes:
            # Counted once moto has applied it: whoever sees the new number and then reads, reads the change.
            with self._lock:
                self.generation += 1
        return answer


# --------------------------------------------------------------------------------------
# fault injection (tests only: off until a test configures it)
# --------------------------------------------------------------------------------------
# Error bodies in each protocol's own format, so botocore parses the code as it would from AWS.
_EC2_ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code><Message>{message}'
    "</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>"
)
_QUERY_ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse><Error><Type>{fault}</Type><Code>{code}</Code>'
    "<Message>{message}</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>"
)
# (protocol, kind) -> (HTTP status, error code); kinds: throttle, error500, error503.
_FAULT_CODES = {
    ("ec2", "throttle"): ("503 Service Unavailable", "RequestLimitExceeded"),
    ("ec2", "error500"): ("500 Internal Server Error", "InternalError"),
    ("ec2", "error503"): ("503 Service Unavailable", "Unavailable"),
    ("query", "throttle"): ("400 Bad Request", "Throttling"),
    ("query", "error500"): ("500 Internal Server Error", "InternalFailure"),
    ("query", "error503"): ("503 Service Unavailable", "ServiceUnavailable"),
    ("json", "throttle"): ("400 Bad Request", "ThrottlingException"),
    ("json", "error500"): ("500 Internal Server Error", "InternalFailure"),
    ("json", "error503"): ("503 Service Unavailable", "ServiceUnavailable"),
    ("rest-json", "throttle"): ("429 Too Many Requests", "ThrottlingException"),
    ("rest-json", "error500"): ("500 Internal Server Error", "ServerException"),
    ("rest-json", "error503"): ("503 Service Unavailable", "ServiceUnavailableException"),
}
FAULT_KINDS = ("throttle", "error500", "error503", "drop")


def protocol_of(environ: dict[str, Any], record: dict[str, str]) -> str:
    """The wire protocol of a classified request: ec2, query, json or rest-json."""
    if environ.get("HTTP_X_AMZ_TARGET"):
        return "json"
    if record.get("service") == "ec2":
        return "ec2"
    if " " not in record.get("operation", " ") and (
        "Action=" in environ.get("QUERY_STRING", "") or environ.get("CONTENT_TYPE", "").startswith("application/x-www")
    ):
        return "query"
    return "rest-json"


def fault_response(protocol: str, kind: str, request_id: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """(status, headers, body) of an injected throttling or server error in ``protocol``'s format."""
    status, code = _FAULT_CODES[(protocol, kind)]
    message = "Rate exceeded" if kind == "throttle" else "injected by the test harness"
    headers = [("x-amzn-RequestId", request_id)]
    if protocol == "ec2":
        body = _EC2_ERROR.format(code=code, message=message, request_id=request_id)
        headers.append(("Content-Type", "text/xml"))
    elif protocol == "query":
        fault = "Sender" if kind == "throttle" else "Receiver"
        body = _QUERY_ERROR.format(fault=fault, code=code, message=message, request_id=request_id)
        headers.append(("Content-Type", "text/xml"))
    else:
        body = json.dumps({"__type": code, "message": message})
        headers += [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", code)]
    data = body.encode()
    headers.append(("Content-Length", str(len(data))))
    return status, headers, data


class FaultInjector:
    """WSGI middleware that answers a seeded fraction of requests with faults, for reliability tests.

    ``POST /_capa/faults`` (JSON) configures it and clears its counters::

        {"seed": 7, "throttle": 0.10, "error": 0.03, "drop": 0.03,
         "match": "clusterapi.aws",          # only requests whose User-Agent contains this are eligible
         "kill_at": [120, 340], "kill_pgid": 4242}

    * ``throttle``: the protocol's throttling error (``RequestLimitExceeded`` for EC2, ``Throttling`` for the
      query services, ``ThrottlingException`` for JSON and REST-JSON), not forwarded to moto;
    * ``error``: HTTP 500 or 503 (even odds) with the protocol's error body, not forwarded;
    * ``drop``: forwarded to moto, which applies it; then the connection is closed without an answer (the change
      happened, the client never heard). Reads are dropped too: harmless, and it happens on AWS as well.
    * ``drop_writes``: a further share of the requests that are not Describe/List/Get, dropped as above;
    * ``kill_at``: eligible request numbers (1-based; with ``kill_mutating`` numbers of the requests that are
      not Describe/List/Get) at which, after moto applied the request, the process group ``kill_pgid`` and every
      descendant of its leader (ansible's workers run in sessions of their own) get SIGKILL and the connection
      is dropped: a crash at a deterministic point.

    ``GET /_capa/faults`` returns the configuration and the counters (eligible requests, faults per kind and per
    ``service:Operation``, kills done); ``POST /_capa/faults/reset`` switches it off. A moto reset keeps it.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._configure({})

    def _configure(self, config: dict[str, Any]) -> None:
        import random

        self.config = {
            "seed": int(config.get("seed", 0)),
            "throttle": float(config.get("throttle", 0.0)),
            "error": float(config.get("error", 0.0)),
            "drop": float(config.get("drop", 0.0)),
            "match": str(config.get("match", "clusterapi.aws")),
            "kill_at": sorted(int(n) for n in config.get("kill_at", [])),
            "kill_pgid": config.get("kill_pgid"),
            "kill_mutating": bool(config.get("kill_mutating", False)),
            "drop_writes": float(config.get("drop_writes", 0.0)),
        }
        self._rng = random.Random(self.config["seed"])
        self.requests = 0
        self.mutating = 0
        self.injected: dict[str, int] = dict.fromkeys(FAULT_KINDS, 0)
        self.by_operation: dict[str, dict[str, int]] = {}
        self.kills: list[dict[str, Any]] = []

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "config": dict(self.config),
                "requests": self.requests,
                "mutating": self.mutating,
                "injected": dict(self.injected),
                "by_operation": {op: dict(kinds) for op, kinds in sorted(self.by_operation.items())},
                "kills": list(self.kills),
            }

    def _control(self, environ: dict[str, Any], start_response: Any, path: str, method: str) -> list[bytes]:
        if path == "/_capa/faults" and method == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            config = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
            with self._lock:
                self._configure(config)
        elif path == "/_capa/faults/reset" and method == "POST":
            with self._lock:
                self._configure({})
        return RequestCounter._json(start_response, "200 OK", self.status())

    def _decide(self, environ: dict[str, Any]) -> tuple[str | None, bool, dict[str, str]]:
        """(fault kind or None, kill now, classified record) for one eligible request."""
        record = classify(environ)
        with self._lock:
            self.requests += 1
            writes = not record["operation"].startswith(READ_ONLY_PREFIXES)
            self.mutating += writes
            number = self.mutating if self.config["kill_mutating"] else self.requests
            kill = number in self.config["kill_at"] and (writes or not self.config["kill_mutating"])
            draw = self._rng.random()
            kind = None
            throttle, error, drop = self.config["throttle"], self.config["error"], self.config["drop"]
            if draw < throttle:
                kind = "throttle"
            elif draw < throttle + error:
                kind = "error500" if self._rng.random() < 0.5 else "error503"
            elif draw < throttle + error + drop:
                kind = "drop"
            elif writes and draw < throttle + error + drop + self.config["drop_writes"]:
                kind = "drop"
            if kill:
                kind = None
            if kind:
                self.injected[kind] += 1
                op = f"{record['service']}:{record['operation']}"
                self.by_operation.setdefault(op, dict.fromkeys(FAULT_KINDS, 0))[kind] += 1
            if kill:
                self.kills.append({"request": self.requests, "operation": f"{record['service']}:{record['operation']}"})
        return kind, kill, record

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "").rstrip("/")
        method = environ.get("REQUEST_METHOD", "GET").upper()
        if path.startswith("/_capa/faults"):
            return self._control(environ, start_response, path, method)
        active = any(self.config[k] for k in ("throttle", "error", "drop", "drop_writes", "kill_at"))
        eligible = (
            active
            and not path.startswith(("/_capa", "/moto-api"))
            and self.config["match"] in environ.get("HTTP_USER_AGENT", "")
        )
        if not eligible:
            return self.app(environ, start_response)
        kind, kill, record = self._decide(environ)
        if kind in ("throttle", "error500", "error503"):
            status, headers, body = fault_response(protocol_of(environ, record), kind, f"capa-fault-{self.requests}")
            start_response(status, headers)
            return [body]
        if kind is None and not kill:
            return self.app(environ, start_response)
        # Drop (or crash): moto applies the request, the answer never reaches the client.
        captured: list[Any] = []
        body_iter = self.app(environ, lambda status, headers, exc_info=None: captured.append(status))
        try:
            b"".join(body_iter)
        finally:
            if hasattr(body_iter, "close"):
                body_iter.close()
        if kill and self.config["kill_pgid"]:
            kill_tree(int(self.config["kill_pgid"]))
        _drop_connection(environ)
        start_response("200 OK", [("Content-Length", "0")])
        return []


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc (Linux)."""
    found: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                # the command name (2nd field) may hold spaces and parentheses: the fields after its last ")"
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        found[parent].append(int(entry))
    return found


def kill_tree(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` and every descendant of its leader: a crash of the whole controller.

    ``killpg`` alone is not that: ansible-core's worker processes call ``setsid()``, so a worker and the module it
    runs are in a group of their own and would survive, going on changing AWS next to the resumed run. Each
    process found is stopped first, so none can fork a child the walk misses, then all are killed.
    """
    stopped: set[int] = set()
    while True:
        children = _children()
        todo, tree = [pgid], set()
        while todo:
            pid = todo.pop()
            if pid not in tree:
                tree.add(pid)
                todo.extend(children.get(pid, []))
        fresh = tree - stopped
        if not fresh:
            break
        for pid in fresh:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        stopped |= fresh
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _drop_connection(environ: dict[str, Any]) -> None:
    """Close the client's socket without a response; werkzeug then sees a dropped connection and writes nothing."""
    import socket

    sock = environ.get("werkzeug.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------------------
# moto fixes
# --------------------------------------------------------------------------------------
_PORTED_PROTOCOLS = {"tcp", "udp", "icmp", "icmpv6", "6", "17", "1", "58"}


def _portless(ip_protocol: Any) -> bool:
    """True for protocols whose rules carry no ports in AWS (anything but tcp/udp/icmp, and -1)."""
    return ip_protocol is not None and str(ip_protocol).lower() not in _PORTED_PROTOCOLS


def apply_moto_fixes(without: tuple[str, ...] = ()) -> list[str]:
    """Apply the fixes described in the module docstring (all but those named in ``without``); return their names.

    In-process users that need moto's answers to be reproducible (the golden machine tests, with moto's id seed) leave
    out fix 8, whose certificate authorities are new keys every time.
    """
    fixes = {
        "portless-sg-rules": _fix_portless_sg_rules,
        "bodiless-signature": _fix_bodiless_signature,
        "iam-action-prefix": _fix_iam_action_prefix,
        "scoped-resources": _fix_scoped_resources,
        "assume-role-external-id": _fix_assume_role_external_id,
        "eks-ami-parameters": _serve_eks_ami_parameters,
        "eks-certificate-authority": _fix_eks_certificate_authority,
        "eks-create-delay": _fix_eks_create_delay,
        "latency-model": _fix_latency_model,
        "presigned-routing": _fix_presigned_routing,
        "tagging-eks": _fix_tagging_eks,
        "service-quotas": _serve_service_quotas,
        "simulate-principal-policy": _serve_simulate_principal_policy,
        "iam-backends-on-demand": _fix_iam_backends_on_demand,
        "launch-template-instance-profile": _fix_launch_template_instance_profile,
        "tagging-classic-elb": _fix_tagging_classic_elb,
        "tagging-ec2-addresses-templates": _fix_tagging_ec2_addresses_templates,
    }
    applied: list[str] = []
    for name, fix in fixes.items():
        if name not in without:
            applied += fix()
    return applied


def _fix_presigned_routing() -> list[str]:
    """Fix 9: route query-signed (presigned) requests by their credential scope."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.infer_service_region_host
    if getattr(original, "_capa_fixed", False):
        return ["presigned-routing"]

    def infer_service_region_host(self: Any, environ: dict[str, Any], path: str) -> Any:
        if not environ.get("HTTP_AUTHORIZATION"):
            credential = parse_qs(environ.get("QUERY_STRING", "")).get("X-Amz-Credential", [""])[0]
            scope = credential.split("/")
            if len(scope) == 5 and scope[4] == "aws4_request":
                patched = dict(environ)
                # The same credential scope, presented where the dispatcher reads it for header-signed requests.
                patched["HTTP_AUTHORIZATION"] = f"AWS4-HMAC-SHA256 Credential={credential}, SignedHeaders=host"
                return original(self, patched, path)
        return original(self, environ, path)

    infer_service_region_host._capa_fixed = True  # type: ignore[attr-defined]
    DomainDispatcherApplication.infer_service_region_host = infer_service_region_host  # type: ignore[method-assign]

    from moto.core.responses import BaseResponse

    original_key = BaseResponse.get_access_key

    def get_access_key(self: Any) -> str:
        if "Authorization" not in self.headers:
            credential = (self.querystring.get("X-Amz-Credential") or [""])[0]
            if credential.count("/") == 4:
                return credential.split("/", 1)[0]
        return original_key(self)

    BaseResponse.get_access_key = get_access_key  # type: ignore[method-assign]
    return ["presigned-routing"]


# moto fix 8: cluster ARN -> the cluster's CA (certificate and key), endpoint and creator, for /_capa/eks/clusters.
EKS_CLUSTERS: dict[str, dict[str, Any]] = {}
_EKS_LOCK = threading.Lock()


def _new_eks_ca() -> tuple[str, str]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


def _fix_eks_certificate_authority() -> list[str]:
    """Fix 8: a real CA and a unique endpoint per EKS cluster; the creator recorded for the simulator."""
    import base64
    import inspect
    import secrets
    import string

    from moto.eks import models as eks_models
    from moto.eks import responses as eks_responses

    cluster_cls = eks_models.Cluster
    if getattr(cluster_cls.__init__, "_capa_fixed", False):
        return ["eks-certificate-authority"]
    original_init = cluster_cls.__init__
    signature = inspect.signature(original_init)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        region = signature.bind(self, *args, **kwargs).arguments.get("region_name", "us-east-1")
        cert, key = _new_eks_ca()
        self.certificate_authority = {"data": base64.b64encode(cert.encode()).decode()}
        label = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _i in range(3))
        self.endpoint = f"https://{secrets.token_hex(16).upper()}.{label}.{region}.eks.amazonaws.com"
        with _EKS_LOCK:
            EKS_CLUSTERS[self.arn] = {
                "arn": self.arn,
                "name": self.name,
                "region": region,
                "endpoint": self.endpoint,
                "ca_cert": cert,
                "ca_key": key,
                "creator_arn": None,
            }

    __init__._capa_fixed = True  # type: ignore[attr-defined]
    cluster_cls.__init__ = __init__  # type: ignore[method-assign]

    original_create = eks_responses.EKSResponse.create_cluster

    def create_cluster(self: Any) -> Any:
        result = original_create(self)
        try:
            from moto.sts.models import sts_backends

            name = self._get_param("name")
            cluster = self.eks_backend.clusters[name]
            backend = sts_backends[self.current_account][self.partition]
            creator = backend.get_caller_identity(self.get_access_key(), self.region)[1]
            with _EKS_LOCK:
                if cluster.arn in EKS_CLUSTERS:
                    EKS_CLUSTERS[cluster.arn]["creator_arn"] = creator
        except Exception:  # noqa: BLE001 - the answer to the caller must not depend on this bookkeeping
            pass
        return result

    eks_responses.EKSResponse.create_cluster = create_cluster  # type: ignore[method-assign]
    return ["eks-certificate-authority"]


# moto fix 15: how long a new EKS cluster stays CREATING (0: ACTIVE at once, moto's own answer).
EKS_CREATE_DELAY: dict[str, float] = {"create_seconds": 0.0}


def set_eks_create_delay(body: dict[str, Any]) -> dict[str, float]:
    seconds = float(body["create_seconds"])
    if seconds < 0:
        raise ValueError("create_seconds must not be negative")
    EKS_CREATE_DELAY["create_seconds"] = seconds
    return dict(EKS_CREATE_DELAY)


def _fix_eks_create_delay() -> list[str]:
    """Fix 15: a cluster created while a delay is set says CREATING for that long - fix 16's timed status, with
    this delay as its floor (the longer of the two holds)."""
    from moto.eks import models as eks_models

    _time_attribute(
        eks_models.Cluster,
        "status",
        {"ACTIVE": _Timed("eks_cluster", "create", from_birth=True, floor=lambda: EKS_CREATE_DELAY["create_seconds"])},
    )
    return ["eks-create-delay"]


# --------------------------------------------------------------------------------------
# moto fix 16: the AWS latency model (table: tools/aws_latencies.py)
# --------------------------------------------------------------------------------------
LATENCY_ENV = "CAPA_AWS_LATENCY_SCALE"
LATENCY_AT_START = parse_scale(os.environ.get(LATENCY_ENV) or 0)
LATENCY: dict[str, float] = {"scale": LATENCY_AT_START}
_CLOCK = Clock()
_RAW = threading.local()  # set while moto's own code must see its real states (see _fix_target_registration)
_EC2_STATE_CODES = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}


def set_latency(body: dict[str, Any]) -> dict[str, float]:
    LATENCY["scale"] = parse_scale(body["scale"])
    return dict(LATENCY)


class _Timed:
    """A transition into a settled state that AWS takes time for: from the object's creation (``from_birth``: moto
    creates it settled, or settles it on a later read, as ELBv2 does) or from the moment moto set that state."""

    def __init__(
        self, resource: str, transition: str, from_birth: bool = False, floor: Callable[[], float] | None = None
    ) -> None:
        self.latency = LATENCIES[(resource, transition)]
        self.resource, self.transition, self.from_birth, self.floor = resource, transition, from_birth, floor

    def seconds(self) -> float:
        modelled = scaled_seconds(self.resource, self.transition, LATENCY["scale"])
        return max(modelled, self.floor()) if self.floor else modelled


def _time_attribute(cls: type, attr: str, timed: dict[str, _Timed]) -> None:
    """Make ``cls.attr`` a property that keeps moto's value and reports AWS's intermediate state until it is due.

    moto's object still holds (and ends in) moto's own state; only what is read before the transition's time has
    passed differs. The delay is fixed when the state is set, at the scale then in force, so objects made while
    the model is off are settled at once.
    """
    if isinstance(cls.__dict__.get(attr), property):
        return
    real_key, due_key, birth_key = f"_capa_{attr}", f"_capa_{attr}_due", f"_capa_{attr}_birth"

    def get_state(self: Any) -> Any:
        real = self.__dict__[real_key]
        entry = timed.get(real) if isinstance(real, str) else None
        if entry is None or getattr(_RAW, "on", False) or due_key not in self.__dict__:
            return real
        return reported_state(real, entry.latency, self.__dict__[due_key], _CLOCK)

    def set_state(self: Any, value: Any) -> None:
        if birth_key not in self.__dict__:
            self.__dict__[birth_key] = {entry.transition: entry.seconds() for entry in timed.values()}
            self.__dict__[birth_key][""] = _CLOCK.now()
        entry = timed.get(value) if isinstance(value, str) else None
        if entry is not None and value != self.__dict__.get(real_key):
            born = self.__dict__[birth_key]
            start, seconds = (born[""], born[entry.transition]) if entry.from_birth else (_CLOCK.now(), entry.seconds())
            self.__dict__[due_key] = start + seconds
        self.__dict__[real_key] = value

    setattr(cls, attr, property(get_state, set_state))


def _fix_latency_model() -> list[str]:
    """Fix 16: resources take AWS's time in their intermediate states while ``LATENCY['scale']`` > 0."""
    from moto.autoscaling import models as asg_models
    from moto.ec2.models import instances as ec2_instances
    from moto.ec2.models import nat_gateways
    from moto.eks import models as eks_models
    from moto.elbv2 import models as elbv2_models

    state = ec2_instances.InstanceState
    _time_attribute(
        state, "name", {"running": _Timed("instance", "launch"), "terminated": _Timed("instance", "terminate")}
    )
    if not isinstance(state.__dict__.get("code"), property):

        def get_code(self: Any) -> int:
            name = self.name  # reported
            return (
                _EC2_STATE_CODES.get(name, self.__dict__["_capa_code"])
                if name != self.__dict__["_capa_name"]
                else self.__dict__["_capa_code"]
            )

        def set_code(self: Any, value: int) -> None:
            self.__dict__["_capa_code"] = value

        state.code = property(get_code, set_code)  # type: ignore[attr-defined]
    _time_attribute(
        nat_gateways.NatGateway,
        "state",
        {"available": _Timed("nat_gateway", "create", from_birth=True), "deleted": _Timed("nat_gateway", "delete")},
    )
    _time_attribute(
        elbv2_models.FakeLoadBalancer, "state", {"active": _Timed("load_balancer", "create", from_birth=True)}
    )
    _time_attribute(eks_models.Nodegroup, "status", {"ACTIVE": _Timed("eks_nodegroup", "create", from_birth=True)})
    _time_attribute(
        eks_models.FargateProfile, "status", {"ACTIVE": _Timed("eks_fargate_profile", "create", from_birth=True)}
    )
    _fix_eks_deleting(eks_models)
    _fix_asg_lifecycle(asg_models.InstanceState)
    _fix_target_registration(elbv2_models.FakeTargetGroup)
    _fix_eip_release_after_nat()
    _fix_dependants_hold_groups_and_subnets()
    return ["latency-model"]


def _fix_eks_deleting(eks_models: Any) -> None:
    """EKS clusters, node groups and Fargate profiles stay listed as ``DELETING`` for their modelled time after moto
    has deleted them (moto forgets them at once). moto's own validation ran first, so a delete AWS refuses is still
    refused; while a node group is DELETING its cluster cannot be deleted, as on AWS. Every call into the EKS backend
    first forgets what is due."""
    backend_cls = eks_models.EKSBackend
    if getattr(backend_cls, "_capa_deleting", False):
        return

    def keep_deleting(container: dict[str, Any], key: str, item: Any, resource: str) -> None:
        if "_capa_gone_at" not in item.__dict__:
            seconds = scaled_seconds(resource, "delete", LATENCY["scale"])
            if seconds <= 0:
                return
            item.__dict__["_capa_gone_at"] = _CLOCK.due(seconds)
        item.status = "DELETING"
        container[key] = item

    def sweep(backend: Any) -> None:
        for name, cluster in list(backend.clusters.items()):
            for children, count in (
                (cluster.nodegroups, "nodegroup_count"),
                (cluster.fargate_profiles, "fargate_profile_count"),
            ):
                for key, child in list(children.items()):
                    if _CLOCK.passed(child.__dict__.get("_capa_gone_at", float("inf"))):
                        del children[key]
                        setattr(cluster, count, getattr(cluster, count) - 1)
            if _CLOCK.passed(cluster.__dict__.get("_capa_gone_at", float("inf"))):
                del backend.clusters[name]

    def swept(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            sweep(self)
            return method(self, *args, **kwargs)

        return call

    for name, method in list(vars(backend_cls).items()):
        if callable(method) and not name.startswith("_"):
            setattr(backend_cls, name, swept(method))

    delete_cluster, delete_nodegroup = backend_cls.delete_cluster, backend_cls.delete_nodegroup
    delete_fargate_profile = backend_cls.delete_fargate_profile

    def delete_cluster_slowly(self: Any, name: str) -> Any:
        cluster = delete_cluster(self, name)
        keep_deleting(self.clusters, name, cluster, "eks_cluster")
        return cluster

    def delete_nodegroup_slowly(self: Any, cluster_name: str, nodegroup_name: str) -> Any:
        nodegroup = delete_nodegroup(self, cluster_name, nodegroup_name)
        cluster = self.clusters[cluster_name]
        keep_deleting(cluster.nodegroups, nodegroup_name, nodegroup, "eks_nodegroup")
        if nodegroup_name in cluster.nodegroups:
            cluster.nodegroup_count += 1  # still attached until it is gone: the cluster cannot be deleted yet
        return nodegroup

    def delete_fargate_profile_slowly(self: Any, cluster_name: str, fargate_profile_name: str) -> Any:
        profile = delete_fargate_profile(self, cluster_name, fargate_profile_name)
        cluster = self.clusters[cluster_name]
        keep_deleting(cluster.fargate_profiles, fargate_profile_name, profile, "eks_fargate_profile")
        if fargate_profile_name in cluster.fargate_profiles:
            cluster.fargate_profile_count += 1
        return profile

    backend_cls.delete_cluster = delete_cluster_slowly
    backend_cls.delete_nodegroup = delete_nodegroup_slowly
    backend_cls.delete_fargate_profile = delete_fargate_profile_slowly
    backend_cls._capa_deleting = True


def _fix_asg_lifecycle(cls: type) -> None:
    """An Auto Scaling instance is ``Pending`` while its EC2 instance is (moto makes it ``InService`` at once)."""
    if isinstance(cls.__dict__.get("lifecycle_state"), property):
        return

    def get_lifecycle(self: Any) -> str:
        real = self.__dict__["_capa_lifecycle_state"]
        if real == "InService" and not getattr(_RAW, "on", False) and self.instance._state.name == "pending":
            return "Pending"
        return real

    def set_lifecycle(self: Any, value: str) -> None:
        self.__dict__["_capa_lifecycle_state"] = value

    cls.lifecycle_state = property(get_lifecycle, set_lifecycle)  # type: ignore[attr-defined]


def _fix_target_registration(cls: type) -> None:
    """ELBv2 accepts a ``pending`` instance as a target (it refuses stopped ones); moto refuses anything not
    ``running``, which the model would turn into refusals AWS does not give, so registration sees moto's state."""
    original = cls.register  # type: ignore[attr-defined]
    if getattr(original, "_capa_fixed", False):
        return

    def register(self: Any, targets: list[dict[str, Any]]) -> None:
        _RAW.on = True
        try:
            original(self, targets)
        finally:
            _RAW.on = False

    register._capa_fixed = True  # type: ignore[attr-defined]
    cls.register = register  # type: ignore[attr-defined]


def _fix_eip_release_after_nat() -> None:
    """``ReleaseAddress`` of a NAT gateway's address is refused while that gateway is still ``deleting``, as AWS
    refuses it (reported as ``AuthFailure``) until the gateway is ``deleted``."""
    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.models import elastic_ip_addresses

    backend_cls = elastic_ip_addresses.ElasticAddressBackend
    original = backend_cls.release_address
    if getattr(original, "_capa_fixed", False):
        return

    def release_address(self: Any, address: str | None = None, allocation_id: str | None = None) -> None:
        for gateway in list(getattr(self, "nat_gateways", {}).values()):
            mapped = [(item.get("allocationId"), item.get("publicIp")) for item in gateway.address_set]
            if gateway.state == "deleting" and any(
                (allocation_id and allocation_id == alloc) or (address and address == ip) for alloc, ip in mapped
            ):
                raise EC2ClientError(
                    "AuthFailure", f"The address is still in use by NAT gateway {gateway.id}, which is deleting."
                )
        original(self, address=address, allocation_id=allocation_id)

    release_address._capa_fixed = True  # type: ignore[attr-defined]
    backend_cls.release_address = release_address  # type: ignore[method-assign]


def _fix_dependants_hold_groups_and_subnets() -> None:
    """``DeleteSecurityGroup`` and ``DeleteSubnet`` are refused (``DependencyViolation``) while an instance that is
    not yet reported ``terminated`` uses the group or sits in the subnet, and ``DeleteSubnet`` also while a NAT
    gateway in it is not yet ``deleted``: their network interfaces hold them on AWS until then. moto deletes both at
    once; with the model off an instance terminates and a NAT gateway goes at once, so this refuses only what AWS
    would refuse at any speed (a group or subnet something running still uses)."""
    from moto.ec2.exceptions import DependencyViolationError
    from moto.ec2.models import security_groups, subnets

    group_cls, subnet_cls = security_groups.SecurityGroupBackend, subnets.SubnetBackend
    if getattr(group_cls.delete_security_group, "_capa_fixed", False):
        return
    delete_group, delete_subnet = group_cls.delete_security_group, subnet_cls.delete_subnet

    def holders(backend: Any) -> list[Any]:
        return [i for i in backend.all_instances() if i._state.name != "terminated"]

    def group_ids(instance: Any) -> set[str]:
        found = {g.id for g in instance.security_groups}
        for nic in instance.nics.values():
            found |= {g.id for g in nic.group_set}
        return found

    def subnet_ids(instance: Any) -> set[str]:
        return {nic.subnet.id for nic in instance.nics.values() if nic.subnet is not None}

    def delete_security_group(self: Any, name: str | None = None, group_id: str | None = None) -> None:
        wanted = group_id or (getattr(self.get_security_group_by_name_or_id(name), "id", None) if name else None)
        using = sorted(i.id for i in holders(self) if wanted and wanted in group_ids(i))
        if using:
            raise DependencyViolationError(f"resource {wanted} has a dependent object (instances {', '.join(using)})")
        delete_group(self, name=name, group_id=group_id)

    def delete_subnet_(self: Any, subnet_id: str) -> Any:
        using = sorted(i.id for i in holders(self) if subnet_id in subnet_ids(i))
        gateways = getattr(self, "nat_gateways", {}).values()
        using += sorted(g.id for g in gateways if g.subnet_id == subnet_id and g.state != "deleted")
        if using:
            raise DependencyViolationError(
                f"The subnet '{subnet_id}' has dependencies and cannot be deleted ({', '.join(using)})."
            )
        return delete_subnet(self, subnet_id)

    delete_security_group._capa_fixed = True  # type: ignore[attr-defined]
    group_cls.delete_security_group = delete_security_group  # type: ignore[method-assign]
    subnet_cls.delete_subnet = delete_subnet_  # type: ignore[method-assign]


def _fix_portless_sg_rules() -> list[str]:
    """Fix 1: store/describe/revoke rules of port-less protocols (IpProtocol "4" etc.)."""
    import inspect

    from moto.ec2.models import security_groups as sg_models

    rule_cls = sg_models.SecurityGroupRule
    original = rule_cls.__init__
    if getattr(original, "_capa_fixed", False):
        return ["portless-sg-rules"]
    signature = inspect.signature(original)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        if not _portless(bound.arguments.get("ip_protocol")):
            original(*bound.args, **bound.kwargs)
            return
        # AWS ignores ports for these protocols: let moto's constructor see dummy ports,
        # then store the rule without any, as AWS describes it.
        bound.arguments["from_port"] = 0
        bound.arguments["to_port"] = 0
        original(*bound.args, **bound.kwargs)
        self.from_port = None
        self.to_port = None

    __init__._capa_fixed = True  # type: ignore[attr-defined]
    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    rule_cls.__init__ = __init__  # type: ignore[method-assign]
    return ["portless-sg-rules"]


def _fix_bodiless_signature() -> list[str]:
    """Fix 2: a request without a body is signed over the empty payload, as AWS checks it."""
    from moto.iam.access_control import IAMRequestBase

    original = IAMRequestBase._create_aws_request
    if getattr(original, "_capa_fixed", False):
        return ["bodiless-signature"]

    def _create_aws_request(self: Any) -> Any:
        if not self._body and self._method in ("GET", "DELETE", "HEAD"):
            saved = self._data
            self._data = b""
            try:
                return original(self)
            finally:
                self._data = saved
        return original(self)

    _create_aws_request._capa_fixed = True  # type: ignore[attr-defined]
    IAMRequestBase._create_aws_request = _create_aws_request  # type: ignore[method-assign]
    return ["bodiless-signature"]


# SigV4 signing names whose IAM action prefix differs.
_IAM_PREFIXES = {"tagging": "tag"}


def _fix_iam_action_prefix() -> list[str]:
    """Fix 3: ``tagging:GetResources`` is the IAM action ``tag:GetResources``."""
    from moto.iam.access_control import IAMRequestBase

    original = IAMRequestBase.__init__
    if getattr(original, "_capa_fixed", False):
        return ["iam-action-prefix"]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        prefix, _sep, operation = self._action.partition(":")
        if prefix in _IAM_PREFIXES:
            self._action = f"{_IAM_PREFIXES[prefix]}:{operation}"

    __init__._capa_fixed = True  # type: ignore[attr-defined]
    IAMRequestBase.__init__ = __init__  # type: ignore[method-assign]
    return ["iam-action-prefix"]


def _first_param(response: Any, *names: str) -> str | None:
    for name in names:
        value = response._get_param(name)
        if isinstance(value, list):
            value = value[0] if value else None
        if value:
            return str(value)
    return None


def _named_arn(service: str, resource: str, params: tuple[str, ...], strip: str = "") -> Callable[[Any], str]:
    """A request's resource ARN from the first of ``params`` it carries (as given when that is an ARN already)."""

    def arn(response: Any) -> str:
        name = _first_param(response, *params)
        if not name:
            return "*"
        if name.startswith("arn:"):
            return name
        account = f"{response.region}:{response.current_account}"
        return f"arn:{response.partition}:{service}:{account}:{resource}{name.lstrip(strip)}"

    return arn


_secret_arn = _named_arn("secretsmanager", "secret:", ("SecretId", "Name"))
# A parameter ARN drops the leading slash of the parameter's name: parameter/cluster.x-k8s.io/...
_parameter_arn = _named_arn("ssm", "parameter/", ("Name", "Names"), strip="/")


def _fix_scoped_resources() -> list[str]:
    """Fix 4: Secrets Manager and SSM actions are evaluated against the secret's / parameter's ARN."""
    from moto.iam.responses import IamResponse
    from moto.secretsmanager.responses import SecretsManagerResponse
    from moto.ssm.responses import SimpleSystemManagerResponse

    for cls, resource in ((SecretsManagerResponse, _secret_arn), (SimpleSystemManagerResponse, _parameter_arn)):
        if not hasattr(cls, "_determine_resource"):
            cls._determine_resource = resource  # type: ignore[attr-defined]
    original = IamResponse._resolve_resource_arn
    if not getattr(original, "_capa_fixed", False):

        def _resolve_resource_arn(self: Any, role_name: str) -> str:
            found = original(self, role_name)
            if found != "*":
                return found
            path = self._get_param("Path") or "/"
            return f"arn:{self.partition}:iam::{self.current_account}:role{path}{role_name}"

        _resolve_resource_arn._capa_fixed = True  # type: ignore[attr-defined]
        IamResponse._resolve_resource_arn = _resolve_resource_arn  # type: ignore[method-assign]
    determine = IamResponse._determine_resource
    if not getattr(determine, "_capa_fixed", False):

        def _determine_resource(self: Any) -> str:
            # IAM's policy simulation acts on the principal simulated (AWS's service authorization reference).
            if (self.data.get("Action") or [""])[0] == "SimulatePrincipalPolicy":
                return str((self.data.get("PolicySourceArn") or ["*"])[0])
            return str(determine(self))

        _determine_resource._capa_fixed = True  # type: ignore[attr-defined]
        IamResponse._determine_resource = _determine_resource  # type: ignore[method-assign]
    return ["scoped-resources"]


def _external_id_allowed(document: Any, external_id: str | None) -> bool:
    """Whether an Allow statement for sts:AssumeRole accepts ``external_id`` (only sts:ExternalId is read)."""
    import fnmatch

    if isinstance(document, str):
        document = json.loads(document)
    statements = document.get("Statement", [])
    for statement in [statements] if isinstance(statements, dict) else statements:
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        if statement.get("Effect") != "Allow" or not any(fnmatch.fnmatchcase("sts:AssumeRole", a) for a in actions):
            continue
        accepted = True
        for operator, conditions in (statement.get("Condition") or {}).items():
            for key, wanted in conditions.items():
                if key.lower() != "sts:externalid" or operator not in ("StringEquals", "StringLike"):
                    continue
                values = [wanted] if isinstance(wanted, str) else list(wanted)
                match = fnmatch.fnmatchcase if operator == "StringLike" else str.__eq__
                if external_id is None or not any(match(external_id, v) for v in values):
                    accepted = False
        if accepted:
            return True
    return False


def _fix_assume_role_external_id() -> list[str]:
    """Fix 5: AssumeRole is refused when the role's trust policy does not accept the external id."""
    from moto.core.exceptions import AccessDeniedError
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends
    from moto.sts.responses import TokenResponse

    original = TokenResponse.assume_role
    if getattr(original, "_capa_fixed", False):
        return ["assume-role-external-id"]

    def assume_role(self: Any) -> Any:
        role_arn = self._get_param("RoleArn") or ""
        parts = role_arn.split(":")
        role = None
        if len(parts) >= 6 and parts[4] in iam_backends:
            try:
                role = iam_backends[parts[4]][parts[1]].get_role_by_arn(role_arn)
            except Exception:  # no such role: moto's own behaviour applies
                role = None
        external_id = self._get_param("ExternalId")
        if role is not None and not _external_id_allowed(role.assume_role_policy_document, external_id):
            signed = re.search(r"Credential=([^/,\s]+)/", self.headers.get("Authorization", ""))
            key_id = signed.group(1) if signed else ""
            caller = sts_backends[self.current_account][self.partition].get_caller_identity(key_id, self.region)[1]
            raise AccessDeniedError(user_arn=caller, action=f"sts:AssumeRole on resource: {role_arn}")
        return original(self)

    assume_role._capa_fixed = True  # type: ignore[attr-defined]
    TokenResponse.assume_role = assume_role  # type: ignore[method-assign]
    return ["assume-role-external-id"]


EKS_AMI_NAME = re.compile(r"^amazon-eks-node-al2023-(?P<arch>x86_64|arm64)-standard-(?P<minor>\d+\.\d+)-v\d+$")
EKS_AMI_PARAMETER = "/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/{arch}/standard/recommended/image_id"


# --------------------------------------------------------------------------------------
# moto fix 14: IAM backends created when used, managed policies parsed once
# --------------------------------------------------------------------------------------
def _fix_iam_backends_on_demand() -> list[str]:
    """Fix 14: the access-key lookup creates no IAM backend; AWS managed policies parsed once per server."""
    from moto.iam import models as iam

    def get_account_id_from(access_key: str) -> str:
        for account_id, account in list(iam.iam_backends.items()):
            for partition in iam.PARTITION_NAMES:
                backend = dict.get(account, partition)  # not account[partition]: that would create it
                if backend is not None and access_key in backend.access_keys:
                    return account_id
        return iam.DEFAULT_ACCOUNT_ID

    parsed: dict[str, Any] = {}

    def _init_aws_policies(self: Any) -> list[Any]:
        if not iam.load_iam_aws_managed_policies():
            return []
        if not parsed:
            parsed.update(json.loads(iam.aws_managed_policies_data))
        account, region = self.account_id, self.region_name
        return [iam.AWSManagedPolicy.from_data(name, account, region, data) for name, data in parsed.items()]

    iam.get_account_id_from = get_account_id_from
    iam.IAMBackend._init_aws_policies = _init_aws_policies
    return ["iam-backends-on-demand"]


def _fix_launch_template_instance_profile() -> list[str]:
    """Fix 17: instances launched from a launch template get the template's instance profile, as on AWS."""
    from moto.ec2.models.instances import InstanceBackend

    original = InstanceBackend.run_instances
    if getattr(original, "_capa_template_profile", False):
        return ["launch-template-instance-profile"]

    def run_instances(self: Any, *args: Any, **kwargs: Any) -> Any:
        reservation = original(self, *args, **kwargs)
        template = kwargs.get("launch_template")
        named = kwargs.get("iam_instance_profile_name") or kwargs.get("iam_instance_profile_arn")
        if not template or named:
            return reservation
        profile = self._get_template_from_args(template).data.get("IamInstanceProfile") or {}
        if profile.get("Name") or profile.get("Arn"):
            for instance in reservation.instances:
                if instance.id not in self.iam_instance_profile_associations:
                    self.associate_iam_instance_profile(
                        instance_id=instance.id,
                        iam_instance_profile_name=profile.get("Name"),
                        iam_instance_profile_arn=profile.get("Arn"),
                    )
        return reservation

    run_instances._capa_template_profile = True  # type: ignore[attr-defined]
    InstanceBackend.run_instances = run_instances  # type: ignore[method-assign]
    return ["launch-template-instance-profile"]


def _fix_tagging_classic_elb() -> list[str]:
    """Fix 19: classic load balancers under AWS's resource type ``elasticloadbalancing:loadbalancer``."""
    from moto.core.resource_tagging import TaggedResource
    from moto.elb.models import ELBBackend

    original = ELBBackend.iter_tagged_resources
    if getattr(original, "_capa_fixed", False):
        return ["tagging-classic-elb"]

    def iter_tagged_resources(self: Any) -> Any:
        for found in original(self):
            yield TaggedResource(arn=found.arn, tags=found.tags, resource_type="elasticloadbalancing:loadbalancer")

    iter_tagged_resources._capa_fixed = True  # type: ignore[attr-defined]
    ELBBackend.iter_tagged_resources = iter_tagged_resources  # type: ignore[method-assign]
    return ["tagging-classic-elb"]


def _fix_tagging_ec2_addresses_templates() -> list[str]:
    """Fix 20: Elastic IPs (``ec2:elastic-ip``) and launch templates (``ec2:launch-template``) in ``GetResources``."""
    from moto.core.resource_tagging import TaggedResource
    from moto.ec2.models import EC2Backend

    original = EC2Backend.iter_tagged_resources
    if getattr(original, "_capa_fixed", False):
        return ["tagging-ec2-addresses-templates"]

    def iter_tagged_resources(self: Any) -> Any:
        yield from original(self)
        kinds = (
            ("elastic-ip", [a.allocation_id for a in self.addresses if a.allocation_id]),
            ("launch-template", list(self.launch_templates)),
        )
        for kind, ids in kinds:
            for resource_id in ids:
                yield TaggedResource(
                    arn=f"arn:{self.partition}:ec2:{self.region_name}:{self.account_id}:{kind}/{resource_id}",
                    tags=dict(self.tags.get(resource_id, {})),
                    resource_type=f"ec2:{kind}",
                )

    iter_tagged_resources._capa_fixed = True  # type: ignore[attr-defined]
    EC2Backend.iter_tagged_resources = iter_tagged_resources  # type: ignore[method-assign]
    return ["tagging-ec2-addresses-templates"]


# --------------------------------------------------------------------------------------
# moto fixes 10-12: what the cluster preflight reads (tagging API, EKS versions, quotas)
# --------------------------------------------------------------------------------------
def _fix_tagging_eks() -> list[str]:
    """Fix 10: EKS clusters and node groups in the tagging API's GetResources."""
    from moto.resourcegroupstaggingapi import models as tagging_models

    original = tagging_models.iter_taggable_backends
    if getattr(original, "_capa_fixed", False):
        return ["tagging-eks"]

    class EksTagged:
        """The EKS backend of one account and region, as the tagging API walks a backend."""

        def __init__(self, backend: Any) -> None:
            self.backend = backend

        def iter_tagged_resources(self) -> Any:
            from moto.core.resource_tagging import TaggedResource

            for cluster in list(self.backend.clusters.values()):
                yield TaggedResource(arn=cluster.arn, tags=dict(cluster.tags or {}), resource_type="eks:cluster")
                for group in list(cluster.nodegroups.values()):
                    yield TaggedResource(arn=group.arn, tags=dict(group.tags or {}), resource_type="eks:nodegroup")

    def iter_taggable_backends(account_id: str, region_name: str) -> Any:
        # moto.eks is imported when first asked, not here: in-process users seed moto's ids before EKS draws any.
        from moto.eks.models import eks_backends

        yield from original(account_id, region_name)
        if account_id in eks_backends and region_name in eks_backends[account_id]:
            yield EksTagged(eks_backends[account_id][region_name])

    iter_taggable_backends._capa_fixed = True  # type: ignore[attr-defined]
    tagging_models.iter_taggable_backends = iter_taggable_backends  # type: ignore[assignment]
    return ["tagging-eks"]


# The Kubernetes versions EKS offers for new clusters (standard or extended support), as DescribeClusterVersions
# answers them (dates from AWS's EKS release calendar).
EKS_CLUSTER_VERSIONS: list[dict[str, Any]] = [
    {
        "clusterVersion": v,
        "releaseDate": r,
        "endOfStandardSupportDate": s,
        "endOfExtendedSupportDate": e,
        "status": st,
        "versionStatus": st,
    }
    for v, r, s, e, st in (
        ("1.28", "2023-09-26", "2024-11-26", "2025-11-26", "EXTENDED_SUPPORT"),
        ("1.29", "2024-01-23", "2025-03-23", "2026-03-23", "EXTENDED_SUPPORT"),
        ("1.30", "2024-05-23", "2025-07-23", "2026-07-23", "EXTENDED_SUPPORT"),
        ("1.31", "2024-09-26", "2025-11-26", "2026-11-26", "STANDARD_SUPPORT"),
        ("1.32", "2025-01-23", "2026-03-23", "2027-03-23", "STANDARD_SUPPORT"),
        ("1.33", "2025-05-29", "2026-07-29", "2027-07-29", "STANDARD_SUPPORT"),
    )
]
EKS_DEFAULT_VERSION = "1.32"


def eks_cluster_versions(params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """DescribeClusterVersions' answer to ``params`` (its query): (versions of the page, next token)."""
    wanted = [v for v in params.get("clusterVersions") or [] if v]
    statuses = [s for s in params.get("status") or params.get("versionStatus") or [] if s]
    found = [
        {
            **v,
            "clusterType": "eks",
            "defaultPlatformVersion": "eks.1",
            "defaultVersion": v["clusterVersion"] == EKS_DEFAULT_VERSION,
        }
        for v in EKS_CLUSTER_VERSIONS
        if (not wanted or v["clusterVersion"] in wanted)
        and (not statuses or v["status"] in statuses)
        and (str(params.get("defaultOnly", "")).lower() != "true" or v["clusterVersion"] == EKS_DEFAULT_VERSION)
    ]
    start = int(params.get("nextToken") or 0)
    size = int(params.get("maxResults") or 100)
    page = found[start : start + size]
    return page, str(start + size) if start + size < len(found) else None


def iam_refusal(environ: dict[str, Any], operation: str) -> str | None:
    """moto's IAM enforcement for a request a WSGI layer here answers itself: None when moto would let it through,
    else the AccessDenied message moto gives. Counts towards ``INITIAL_NO_AUTH_ACTION_COUNT`` as moto's own do."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.access_control import IAMRequest
    from moto.iam.models import get_account_id_from

    if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
        ActionAuthenticatorMixin.request_count += 1
        return None
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    match = re.search(r"Credential=([^/,\s]+)/", authorization)
    headers = {"Authorization": authorization}
    if environ.get("HTTP_X_AMZ_SECURITY_TOKEN"):
        headers["X-Amz-Security-Token"] = environ["HTTP_X_AMZ_SECURITY_TOKEN"]
    try:
        request = IAMRequest(
            account_id=get_account_id_from(match.group(1) if match else ""),
            method=environ.get("REQUEST_METHOD", "GET"),
            path=environ.get("PATH_INFO", "/"),
            data={},
            body=b"",
            headers=headers,
            action=operation,
        )
        request.check_action_permitted("*")
    except Exception as e:  # noqa: BLE001 - moto's AccessDenied / InvalidClientTokenId, answered as such
        return getattr(e, "message", None) or str(e)
    return None


class EksClusterVersions:
    """moto fix 11 (WSGI level): EKS ``DescribeClusterVersions`` (``GET /cluster-versions``), which moto lacks.

    A WSGI layer rather than a patch of moto's EKS responses: importing ``moto.eks`` draws random values, and the
    in-process users of :func:`apply_moto_fixes` seed moto's ids before EKS may draw any.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    @staticmethod
    def _is_ours(environ: dict[str, Any]) -> bool:
        if environ.get("REQUEST_METHOD", "GET").upper() != "GET":
            return False
        if (environ.get("PATH_INFO") or "").rstrip("/") != "/cluster-versions":
            return False
        match = _CRED_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
        return bool(match) and match.group(2) == "eks"

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if not self._is_ours(environ):
            return self.app(environ, start_response)
        refused = iam_refusal(environ, "DescribeClusterVersions")
        if refused:
            body = json.dumps({"message": refused}).encode()
            headers = [("Content-Type", "application/json"), ("x-amzn-ErrorType", "AccessDeniedException")]
            start_response("403 Forbidden", [*headers, ("Content-Length", str(len(body)))])
            return [body]
        query = parse_qs(environ.get("QUERY_STRING", ""))
        params = {
            "clusterVersions": query.get("clusterVersions", []),
            "status": query.get("status", []),
            "versionStatus": query.get("versionStatus", []),
            "defaultOnly": (query.get("defaultOnly") or [""])[0],
            "maxResults": (query.get("maxResults") or [""])[0],
            "nextToken": (query.get("nextToken") or [""])[0],
        }
        versions, token = eks_cluster_versions(params)
        answer: dict[str, Any] = {"clusterVersions": versions}
        if token:
            answer["nextToken"] = token
        body = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


class EksUpdates:
    """moto fix 18 (WSGI level): EKS version updates and their update records, on moto's own clusters and node groups.

    A WSGI layer for the reason :class:`EksClusterVersions` is one. Every EKS request first settles the updates
    that are due, so moto's own answers (DescribeCluster, DescribeNodegroup) see the new version and status."""

    ROUTES = (
        ("POST", re.compile(r"^/clusters/(?P<name>[^/]+)/updates$"), "UpdateClusterVersion"),
        ("GET", re.compile(r"^/clusters/(?P<name>[^/]+)/updates$"), "ListUpdates"),
        ("GET", re.compile(r"^/clusters/(?P<name>[^/]+)/updates/(?P<update>[^/]+)$"), "DescribeUpdate"),
        (
            "POST",
            re.compile(r"^/clusters/(?P<name>[^/]+)/node-groups/(?P<nodegroup>[^/]+)/update-version$"),
            "UpdateNodegroupVersion",
        ),
    )

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()
        # (account, region, cluster) -> update id -> the update record and what it changes once due.
        self.updates: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        match = _CRED_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
        if not match or match.group(2) != "eks":
            return self.app(environ, start_response)
        region = match.group(1)
        with self.lock:
            self._settle()
        route = self._route(environ.get("REQUEST_METHOD", "GET").upper(), environ.get("PATH_INFO") or "")
        if route is None:
            return self.app(environ, start_response)
        operation, found = route
        refused = iam_refusal(environ, operation)
        if refused:
            return self._answer(start_response, 403, {"message": refused}, "AccessDeniedException")
        try:
            with self.lock:
                answer = self._operate(operation, found, environ, region)
        except _EksError as e:
            return self._answer(start_response, e.status, {"message": e.message}, e.code)
        return self._answer(start_response, 200, answer)

    def _route(self, method: str, path: str) -> tuple[str, dict[str, str]] | None:
        for verb, pattern, operation in self.ROUTES:
            found = pattern.match(path)
            if verb == method and found:
                return operation, found.groupdict()
        return None

    # the operations ----------------------------------------------------------------------------------------------
    def _operate(self, operation: str, path: dict[str, str], environ: dict[str, Any], region: str) -> dict[str, Any]:
        from moto.iam.models import get_account_id_from

        access_key = re.search(r"Credential=([^/,\s]+)/", environ.get("HTTP_AUTHORIZATION", ""))
        account = get_account_id_from(access_key.group(1) if access_key else "")
        name = urllib.parse.unquote(path["name"])
        cluster = self._cluster(account, region, name)
        records = self.updates.setdefault((account, region, name), {})
        query = parse_qs(environ.get("QUERY_STRING", ""))
        if operation == "DescribeUpdate":
            record = records.get(urllib.parse.unquote(path["update"]))
            wanted = (query.get("nodegroupName") or [None])[0]
            if record is None or record["nodegroup"] != wanted:
                raise _EksError(404, "ResourceNotFoundException", f"No update found for ID: {path['update']}")
            return {"update": record["update"]}
        if operation == "ListUpdates":
            wanted = (query.get("nodegroupName") or [None])[0]
            return {"updateIds": [i for i, r in records.items() if r["nodegroup"] == wanted]}
        body = json.loads(_read_body(environ) or b"{}")
        if operation == "UpdateClusterVersion":
            target: Any = cluster
            seconds = scaled_seconds("eks_cluster", "update", LATENCY["scale"])
            nodegroup = None
        else:
            nodegroup = urllib.parse.unquote(path["nodegroup"])
            target = cluster.nodegroups.get(nodegroup)
            if target is None:
                raise _EksError(404, "ResourceNotFoundException", f"No node group found for name: {nodegroup}.")
            seconds = scaled_seconds("eks_nodegroup", "update", LATENCY["scale"]) * self._rounds(target)
        version = body.get("version") or (cluster.version if nodegroup else None)
        self._check(cluster, target, nodegroup, version, records)
        update = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "VersionUpdate",
            "params": [{"type": "Version", "value": version}]
            + ([{"type": "ReleaseVersion", "value": body["releaseVersion"]}] if body.get("releaseVersion") else []),
            "createdAt": time.time(),
            "errors": [],
        }
        records[update["id"]] = {
            "update": update,
            "nodegroup": nodegroup,
            "target": target,
            "version": version,
            "release": body.get("releaseVersion"),
            "due": _CLOCK.due(seconds),
        }
        target.status = "UPDATING"
        return {"update": update}

    @staticmethod
    def _cluster(account: str, region: str, name: str) -> Any:
        from moto.eks.models import eks_backends

        cluster = eks_backends[account][region].clusters.get(name)
        if cluster is None:
            raise _EksError(404, "ResourceNotFoundException", f"No cluster found for name: {name}.")
        return cluster

    @staticmethod
    def _rounds(nodegroup: Any) -> int:
        """How many nodes at a time a rolling update replaces, in rounds: desired / maxUnavailable."""
        desired = int((nodegroup.scaling_config or {}).get("desiredSize") or 1)
        unavailable = int((nodegroup.update_config or {}).get("maxUnavailable") or 1)
        return max(1, math.ceil(desired / max(1, unavailable)))

    @staticmethod
    def _check(
        cluster: Any, target: Any, nodegroup: str | None, version: str | None, records: dict[str, dict[str, Any]]
    ) -> None:
        if any(r["update"]["status"] == "InProgress" for r in records.values()) or target.status != "ACTIVE":
            raise _EksError(409, "ResourceInUseException", "An update is already in progress")
        current = tuple(int(p) for p in str(target.version).split(".")[:2])
        wanted = tuple(int(p) for p in str(version).split(".")[:2]) if version else current
        if nodegroup is None and wanted != (current[0], current[1] + 1):
            raise _EksError(
                400,
                "InvalidParameterException",
                f"Unsupported Kubernetes minor version update from {target.version} to {version}",
            )
        if nodegroup is not None and (wanted > tuple(int(p) for p in str(cluster.version).split(".")[:2])):
            raise _EksError(
                400,
                "InvalidParameterException",
                f"Requested Kubernetes version {version} is newer than the cluster's {cluster.version}",
            )

    def _settle(self) -> None:
        for records in self.updates.values():
            for record in records.values():
                if record["update"]["status"] == "InProgress" and _CLOCK.passed(record["due"]):
                    target = record["target"]
                    target.version = record["version"]
                    if record["release"]:
                        target.release_version = record["release"]
                    target.status = "ACTIVE"
                    record["update"]["status"] = "Successful"

    @staticmethod
    def _answer(start_response: Any, status: int, answer: dict[str, Any], error: str | None = None) -> list[bytes]:
        body = json.dumps(answer).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        if error:
            headers.append(("x-amzn-ErrorType", error))
        reasons = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 409: "Conflict"}
        start_response(f"{status} {reasons[status]}", headers)
        return [body]


class _EksError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _read_body(environ: dict[str, Any]) -> bytes:
    """Read (and put back, for the layers after this one) a request's body."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return b""
    if length <= 0:
        return b""
    body = environ["wsgi.input"].read(length)
    environ["wsgi.input"] = io.BytesIO(body)
    return body


# AWS's default values of the quotas the cluster preflight reads (moto knows the vpc service's only).
SERVICE_QUOTA_DEFAULTS: dict[tuple[str, str], tuple[str, float]] = {
    ("ec2", "L-0263D0A3"): ("EC2-VPC Elastic IPs", 5.0),
    ("ec2", "L-1216C47A"): ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1152.0),
    ("ec2", "L-34B43A08"): ("All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", 1152.0),
    ("elasticloadbalancing", "L-E9E9831D"): ("Classic Load Balancers per Region", 20.0),
    ("elasticloadbalancing", "L-69A177A2"): ("Network Load Balancers per Region", 50.0),
    ("elasticloadbalancing", "L-53DA6B97"): ("Application Load Balancers per Region", 50.0),
}
# (region, service, code) -> applied value, posted by tests to /_capa/quotas.
APPLIED_QUOTAS: dict[tuple[str, str, str], float] = {}
_QUOTAS_LOCK = threading.Lock()


def _quota_answer(service: str, code: str, name: str, value: float, region: str, account: str) -> dict[str, Any]:
    return {
        "ServiceCode": service,
        "ServiceName": service,
        "QuotaArn": f"arn:aws:servicequotas:{region}:{account}:{service}/{code}",
        "QuotaCode": code,
        "QuotaName": name,
        "Value": value,
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
    }


def _serve_service_quotas() -> list[str]:
    """Fix 12: GetServiceQuota for the EC2 and ELB quotas, and applied values set through /_capa/quotas."""
    from moto.servicequotas import models as quota_models
    from moto.servicequotas.exceptions import NoSuchResource

    backend_cls = quota_models.ServiceQuotasBackend
    original = backend_cls.get_service_quota
    if getattr(original, "_capa_fixed", False):
        return ["service-quotas"]

    def get_service_quota(self: Any, service_code: str, quota_code: str) -> dict[str, Any]:
        try:
            known: dict[str, Any] | None = dict(original(self, service_code, quota_code))
        except NoSuchResource:
            known = None
        if known is None and (service_code, quota_code) in SERVICE_QUOTA_DEFAULTS:
            name, value = SERVICE_QUOTA_DEFAULTS[(service_code, quota_code)]
            known = _quota_answer(service_code, quota_code, name, value, self.region_name, self.account_id)
        if known is None:
            raise NoSuchResource
        with _QUOTAS_LOCK:
            applied = APPLIED_QUOTAS.get((self.region_name, service_code, quota_code))
        if applied is not None:
            known["Value"] = applied
        return known

    get_service_quota._capa_fixed = True  # type: ignore[attr-defined]
    backend_cls.get_service_quota = get_service_quota  # type: ignore[method-assign]
    return ["service-quotas"]


def _principal_policies(backend: Any, arn: str) -> list[str]:
    """The identity-based policy documents of the user or role ``arn`` (NoSuchEntity when there is none)."""
    from moto.iam.exceptions import NotFoundException

    kind, _sep, name = arn.split(":", 5)[-1].partition("/")
    name = name.rsplit("/", 1)[-1]  # a path before the name
    documents: list[str] = []

    def default_version(policy: Any) -> str:
        return next(v.document for v in policy.versions if v.is_default)

    if kind == "user":
        user = backend.get_user(name)  # NoSuchEntity when it does not exist
        if user.arn != arn:
            raise NotFoundException(f"The user with name {name} cannot be found.")
        documents += [backend.get_user_policy(name, p)["policy_document"] for p in backend.list_user_policies(name)]
        documents += [default_version(p) for p in backend.list_attached_user_policies(name)[0]]
        for group in backend.get_groups_for_user(name):
            documents += [
                backend.get_group_policy(group.name, p)["policy_document"]
                for p in backend.list_group_policies(group.name)
            ]
            documents += [default_version(p) for p in backend.list_attached_group_policies(group.name)[0]]
        return documents
    if kind == "role":
        role = backend.get_role(name)
        if role.arn != arn:
            raise NotFoundException(f"The role with name {name} cannot be found.")
        documents += [backend.get_role_policy(name, p)[1] for p in backend.list_role_policies(name)]
        documents += [default_version(p) for p in backend.list_attached_role_policies(name)[0]]
        return documents
    raise NotFoundException(f"{arn} is not a user or role this account knows.")


def simulate(documents: list[str], action: str, resource: str) -> tuple[str, list[str]]:
    """(decision, missing context keys) of IAM's simulator for one action on one resource."""
    from moto.iam.access_control import IAMPolicyStatement

    decision, missing = "implicitDeny", []
    for document in documents:
        body = json.loads(document) if isinstance(document, str) else document
        statements = body.get("Statement", [])
        for statement in statements if isinstance(statements, list) else [statements]:
            matcher = IAMPolicyStatement(statement)
            key = "NotAction" if "NotAction" in statement else "Action"
            concerned = matcher._check_element_matches(key, action) != (key == "NotAction")
            resource_key = "NotResource" if "NotResource" in statement else "Resource"
            if resource_key in statement:
                concerned = concerned and matcher._check_element_matches(resource_key, resource) != (
                    resource_key == "NotResource"
                )
            if not concerned:
                continue
            if statement.get("Condition"):
                missing += [k for test in statement["Condition"].values() for k in test]
                continue
            if statement.get("Effect") == "Deny":
                return "explicitDeny", []
            decision = "allowed"
    return decision, sorted(set(missing)) if decision != "allowed" else []


def _serve_simulate_principal_policy() -> list[str]:
    """Fix 13: IAM SimulatePrincipalPolicy over the principal's identity-based policies."""
    from moto.core.responses import ActionResult
    from moto.iam.responses import IamResponse

    if hasattr(IamResponse, "simulate_principal_policy"):
        return ["simulate-principal-policy"]

    def simulate_principal_policy(self: Any) -> Any:
        from moto import settings
        from moto.core.authorization import ActionAuthenticatorMixin

        arn = self._get_param("PolicySourceArn")
        # Without IAM enforcement this endpoint lets every caller do everything: the simulation says so too (what a
        # policy would allow is only meaningful where policies are enforced).
        enforced = ActionAuthenticatorMixin.request_count >= settings.INITIAL_NO_AUTH_ACTION_COUNT
        actions = self._get_param("ActionNames", [])
        resources = self._get_param("ResourceArns", []) or ["*"]
        documents = _principal_policies(self.backend, arn)
        results = []
        for action in actions:
            for resource in resources:
                decision, missing = simulate(documents, action, resource) if enforced else ("allowed", [])
                result: dict[str, Any] = {
                    "EvalActionName": action,
                    "EvalResourceName": resource,
                    "EvalDecision": decision,
                    "MatchedStatements": [],
                }
                if missing:
                    result["MissingContextValues"] = missing
                results.append(result)
        start = int(self._get_param("Marker") or 0)
        size = self._get_int_param("MaxItems", 1000)
        page = results[start : start + size]
        more = start + size < len(results)
        answer: dict[str, Any] = {"EvaluationResults": page, "IsTruncated": more}
        if more:
            answer["Marker"] = str(start + size)
        return ActionResult(answer)

    IamResponse.simulate_principal_policy = simulate_principal_policy  # type: ignore[attr-defined]
    return ["simulate-principal-policy"]


def set_applied_quota(body: dict[str, Any]) -> dict[str, Any]:
    key = (str(body["region"]), str(body["service"]), str(body["code"]))
    with _QUOTAS_LOCK:
        APPLIED_QUOTAS[key] = float(body["value"])
    return {"applied": list(key), "value": float(body["value"])}


def forget_applied_quotas() -> None:
    with _QUOTAS_LOCK:
        APPLIED_QUOTAS.clear()


def eks_ami_parameters(images: list[dict[str, Any]]) -> dict[str, str]:
    """``{parameter name: newest image id}`` for the EKS-optimised AL2023 images among ``images``."""
    newest: dict[str, tuple[str, str]] = {}
    for image in images:
        found = EKS_AMI_NAME.match(image.get("name", ""))
        if not found:
            continue
        name = EKS_AMI_PARAMETER.format(minor=found["minor"], arch=found["arch"])
        candidate = (image.get("creation_date", ""), image["ami_id"])
        newest[name] = max(newest.get(name, candidate), candidate)
    return {name: pair[1] for name, pair in newest.items()}


def _serve_eks_ami_parameters() -> list[str]:
    """Fix 6: the public EKS-optimised AMI parameters (see the module docstring)."""
    from moto.ssm import models as ssm_models

    parameters_cls = ssm_models.ParameterDict
    original = parameters_cls._check_loading_status
    if getattr(original, "_capa_fixed", False):
        return ["eks-ami-parameters"]
    with open(os.environ["MOTO_AMIS_PATH"], encoding="utf-8") as handle:
        published = eks_ami_parameters(json.load(handle))

    def _check_loading_status(self: Any, key: str) -> None:
        original(self, key)
        if str(key or "").startswith("/aws/service/eks/") and not getattr(self, "_capa_eks_loaded", False):
            self._capa_eks_loaded = True
            for name, image_id in published.items():
                # defaultdict's own lookup: ParameterDict.__getitem__ would come back here.
                defaultdict.__getitem__(self, name).append(
                    ssm_models.Parameter(
                        account_id=self.account_id,
                        name=name,
                        value=image_id,
                        parameter_type="String",
                        description=None,
                        allowed_pattern=None,
                        keyid=None,
                        last_modified_date=ssm_models.utcnow(),
                        version=1,
                        data_type="aws:ec2:image",
                    )
                )

    _check_loading_status._capa_fixed = True  # type: ignore[attr-defined]
    parameters_cls._check_loading_status = _check_loading_status  # type: ignore[method-assign]
    return ["eks-ami-parameters"]


class ClientTokenCache:
    """moto fix 7 (WSGI level): creates with an idempotency token answer as AWS does on a repeat.

    AWS returns the first answer again when a create is repeated with the same ``ClientToken`` (EC2:
    RunInstances, CreateNatGateway, CreateFleet, CreateLaunchTemplate[Version], ...) or ``clientRequestToken``
    (EKS CreateCluster, CreateNodegroup, CreateFargateProfile) and the same parameters; that is what makes a
    retry after a lost response safe. moto ignores these tokens (it creates a second instance, NAT gateway or
    fleet, or answers ResourceInUse). This layer remembers the successful answer of each tokened create
    (per region, service, operation and token) and replays it for an identical repeat. A repeat with other
    parameters goes to moto unchanged (AWS would answer IdempotentParameterMismatch; moto's usual answer is
    kept, so nothing becomes more lenient than before). ``POST /moto-api/reset`` forgets the answers.
    """

    _JSON_TOKENS = ("clientRequestToken", "ClientToken", "clientToken")

    def __init__(self, app: Any) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, ...], tuple[str, str, list[tuple[str, str]], bytes]] = {}

    def _token(self, environ: dict[str, Any], body: bytes) -> str | None:
        if environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
            return parse_qs(body.decode("utf-8", "replace")).get("ClientToken", [None])[0]
        if body[:1] == b"{" and environ.get("REQUEST_METHOD", "").upper() == "POST":
            try:
                data = json.loads(body)
            except ValueError:
                return None
            if isinstance(data, dict):
                return next((str(data[k]) for k in self._JSON_TOKENS if data.get(k)), None)
        return None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/moto-api/reset"):
            with self._lock:
                self._answers.clear()
            return self.app(environ, start_response)
        if path.startswith(CAPA_PREFIX) or path.startswith("/moto-api"):
            return self.app(environ, start_response)
        body = _read_body(environ)
        token = self._token(environ, body)
        if not token:
            return self.app(environ, start_response)
        record = classify(environ)
        scope = _CRED_RE.search(environ.get("HTTP_AUTHORIZATION", ""))
        key = (scope.group(1) if scope else "", record["service"], record["operation"], path, token)
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            known = self._answers.get(key)
        if known and known[0] == digest:
            start_response(known[1], known[2])
            return [known[3]]
        captured: list[Any] = []

        def remember(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured[:] = [status, list(headers)]
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        chunks = self.app(environ, remember)
        try:
            data = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        if captured and captured[0].startswith("2") and known is None:
            with self._lock:
                self._answers.setdefault(key, (digest, captured[0], captured[1], data))
        return [data]


# --------------------------------------------------------------------------------------
# server
# --------------------------------------------------------------------------------------
def build_app() -> FaultInjector:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return FaultInjector(
        RequestCounter(
            EksClusterVersions(EksUpdates(ClientTokenCache(DomainDispatcherApplication(create_backend_app))))
        )
    )


def _write_atomic(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


def _remove_own_file(path: str | None, content: str) -> None:
    """Remove a pid/url file unless another server has replaced it meanwhile."""
    if path:
        try:
            if Path(path).read_text() == content:
                Path(path).unlink()
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default 0: a free port)")
    parser.add_argument("--pidfile", help="write the process id here")
    parser.add_argument("--urlfile", help="write http://HOST:PORT here once listening")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    parser.add_argument(
        "--exit-with-parent", action="store_true", help="stop when the parent process exits (test fixtures)"
    )
    args = parser.parse_args(argv)

    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    fixes = apply_moto_fixes()

    class Handler(MotoRequestHandler):
        def log_request(self, *a: Any, **kw: Any) -> None:
            if args.verbose:
                super().log_request(*a, **kw)

    server = make_server(args.host, args.port, build_app(), threaded=True, request_handler=Handler)
    port = server.server_port
    os.environ["MOTO_PORT"] = str(port)
    url = f"http://{args.host}:{port}"

    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    thread = threading.Thread(target=server.serve_forever, name="moto-server", daemon=True)
    thread.start()
    if args.pidfile:
        _write_atomic(args.pidfile, f"{os.getpid()}\n")
    if args.urlfile:
        _write_atomic(args.urlfile, f"{url}\n")
    print(f"moto server listening on {url} (pid {os.getpid()}; fixes: {', '.join(fixes) or 'none'})", flush=True)
    parent = os.getppid()
    try:
        while not stop.wait(0.5):
            if not thread.is_alive():
                return 1
            if args.exit_with_parent and os.getppid() != parent:
                break
    finally:
        server.shutdown()
        server.server_close()
        _remove_own_file(args.pidfile, f"{os.getpid()}\n")
        _remove_own_file(args.urlfile, f"{url}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
