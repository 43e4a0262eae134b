# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)


class ModuleDocFragment:
    # The options every clusterapi.aws module shares, on top of amazon.aws's connection options, with IDENTITY
    # (clusterapi.aws.common.identity). Read-only (_info) modules use these alone; the others add STATE
    # (clusterapi.aws.common.state).
    DOCUMENTATION = r"""
options:
  cluster_name:
    description:
      - The cluster this tier belongs to. Resources the module creates carry the CAPA ownership tag
        C(sigs.k8s.io/cluster-api-provider-aws/cluster/<cluster_name>=owned); only resources with that tag are
        ever modified or deleted.
      - Lower-case letters, digits and C(-), at most 40 characters.
    type: str
    required: true
  additional_tags:
    description:
      - Tags added to every resource the module creates (CAPA's C(additionalTags)). At most 50; keys up to 128
        characters, values up to 256, no C(aws:) prefix. A C(Name) here overrides CAPA's Name.
      - Tags follow this option on every resource the cluster owns, like C(purge_tags=true) of amazon.aws but limited
        to what the collection wrote. Each owned resource records the keys it was given in the tag
        C(sigs.k8s.io/cluster-api-provider-aws/last-applied-tags) (CAPA keeps the same record in its
        C(last-applied-tags) annotation); a key that is in the record and no longer in I(additional_tags) is removed
        on the next run (C(DeleteTags), C(RemoveTags), C(UntagResource) ...), with the C(plan) reason
        C(tags no longer in additional_tags) in check mode first. A changed value is rewritten.
      - Never removed - tags someone else wrote (not in the record), C(aws:) tags, the ownership and role tags and
        the tags that say how a machine was made; nothing of a resource the cluster does not own is touched.
        Bootstrap-data secrets keep the tags they were created with (each lives only until its node fetched it).
      - The record holds 256 characters, so the keys given here may take 256 characters joined by commas; more fails
        before any request.
    type: dict
    default: {}
  wait:
    description:
      - Wait until created resources are available and deleted ones are gone.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds the whole run may spend waiting, shared by every wait of the run.
    type: int
    default: 600
  shared_reads:
    description:
      - Reads an earlier module run of the same cluster handed forward, as its result C(shared_reads) returned them.
        A describe this run makes that is the identical request (same operation, parameters, region, endpoint and
        I(identity)) of one made there at most 120 seconds ago is answered from it without a request, once per run
        (the same request again is a poll and goes to AWS). A read by ids of what an earlier read returned whole
        (a VPC by id after the VPC by its owner tag) and a load balancer's tags the tagging API's answer lists are
        answered from them the same way.
      - Only descriptions of infrastructure travel (EC2, load balancer, Auto Scaling and EKS describes, the tagging
        API, secret names), never a secret's value, user data or an instance attribute.
      - When given, the result carries C(shared_reads) for the next run - everything given and read, or nothing once
        the run made or planned a change (it may have changed any of it) - and C(reads_shared), the requests
        answered from them per C(service:Operation) (not counted in C(api_calls)). C(shared_reads) is one packed
        string (zlib-compressed JSON, base64), never nested data; when one of the run's C(no_log) values is among the
        reads, it packs nothing.
      - The roles pass it from step to step (C(clusterapi.aws.capa_step) keeps it in the host fact
        C(capa_shared_reads)), so a run that changes nothing reads each thing once.
      - A result's C(shared_reads) or that fact's value (the same packed string, which the task's C(invocation)
        echoes as one value instead of every answer); the unpacked dict is accepted too.
    type: raw
notes:
  - Every result carries C(plan), the ordered mutating AWS calls the run made (in check mode, would make),
    and C(api_calls), the number of AWS requests per C(service:Operation).
  - In check mode, ids of resources that would be created are returned as placeholders
    C(planned:<kind>:<name>), which the other modules of this collection accept, so a whole playbook runs in
    check mode.
"""

    STATE = r"""
options:
  state:
    description:
      - C(present) reconciles AWS towards the options; C(absent) deletes what the cluster owns for this tier, in
        dependency order, and leaves everything else alone.
    type: str
    choices: [present, absent]
    default: present
"""

    # CAPA's AWSClusterRoleIdentity: every module (with DOCUMENTATION) and the capa_kubeconfig lookup take it.
    IDENTITY = r"""
options:
  identity:
    description:
      - A role to assume for this cluster (CAPA's AWSClusterRoleIdentity). The credentials given call STS
        AssumeRole, and every other request of the run uses the role's credentials.
    type: dict
    suboptions:
      role_arn:
        description: ARN of the role to assume.
        type: str
        required: true
      external_id:
        description: External id the role's trust policy requires.
        type: str
      session_name:
        description: Session name; defaults to C(capa-<cluster_name>).
        type: str
      duration_seconds:
        description: Lifetime of the assumed credentials (900 to 43200).
        type: int
        default: 3600
      source_identity:
        description:
          - A role assumed first; its credentials then assume I(role_arn) (chained identities).
        type: dict
        suboptions:
          role_arn:
            description: ARN of the source role.
            type: str
            required: true
          external_id:
            description: External id of the source role.
            type: str
          session_name:
            description: Session name for the source role.
            type: str
          duration_seconds:
            description: Lifetime of the source credentials (900 to 43200).
            type: int
            default: 3600
"""
