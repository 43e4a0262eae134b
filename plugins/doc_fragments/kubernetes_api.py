# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)


class ModuleDocFragment:
    # The kubernetes_api option of the modules that talk to the workload cluster. Declared once in
    # plugins/module_utils/workload/access.py (KUBERNETES_API); a unit test fails when this text drifts from it.
    DOCUMENTATION = r"""
options:
  kubernetes_api:
    description:
    - How the controller reaches the cluster's Kubernetes API server (and, through it, etcd).
    type: dict
    default: {}
    suboptions:
      mode:
        description:
        - C(auto) - use the API when it answers. When it does not, workers are judged by the AWS-only
          signal C(InstanceRunning) and removed without a drain, each with a warning, and a control-plane
          scale-down or replacement is refused before any change.
        - C(required) - fail before any change when the API does not answer.
        - C(none) - never contact it (no route from the controller); otherwise as C(auto) without the
          API.
        type: str
        default: auto
        choices:
        - auto
        - required
        - none
      server:
        description:
        - Reach the API server at this URL (C(https://host:port)) instead of the control-plane endpoint
          - a tunnel, an SSM port forward or a bastion C(ssh -L) to a private cluster. The server certificate
          is still checked for the endpoint's name (or I(tls_server_name)).
        type: str
      tls_server_name:
        description:
        - The name the API server's certificate must carry, when it is not the endpoint host.
        type: str
      proxy:
        description:
        - An HTTP CONNECT proxy (C(http://host:port)) to the API server.
        type: str
      timeout:
        description:
        - Seconds to wait for a connection (reads wait three times as long).
        type: int
        default: 10
"""
