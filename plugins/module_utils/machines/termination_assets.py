# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the termination watcher that runs on spot and pool nodes, as text shipped in cloud-init.

Modules run away from the collection's files (on the controller or a target host, from a zip), so the script and
its systemd unit are string constants that :mod:`._termination` writes into the node's cloud-config.

Why Python 3 and not POSIX sh: the script has to tell an IMDS 404 ("no notice") from a network error, refresh an
IMDSv2 token and parse the spot notice's JSON; with sh that needs curl and jq, which not every image has, while
python3 is on the Ubuntu and Amazon Linux images CAPA builds (Flatcar has none, but it boots with Ignition, which
this does not cover). Only the standard library is used.

The cloud-config documents these land in are rendered by cloud-init's jinja first (``## template: jinja``), so
neither text may contain jinja delimiters (double braces, brace-percent, brace-hash); a unit test checks that.
"""

from __future__ import annotations

WATCHER_PATH = "/usr/local/sbin/capa-termination-watcher"
UNIT_NAME = "capa-termination-watcher.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT_NAME}"

WATCHER_SCRIPT = r'''#!/usr/bin/env python3
# clusterapi.aws termination watcher: drains this node before EC2 takes the instance away.
#
# Polls the instance metadata service (IMDSv2) for a spot interruption notice (spot/instance-action) and, when
# CAPA_WATCHER_LIFECYCLE_HOOK is set, for an auto scaling scale-in (autoscaling/target-lifecycle-state =
# Terminated). On either it cordons and drains the node with the kubelet's credentials; on scale-in it then
# completes the lifecycle action so the instance goes without waiting for the hook's timeout. It handles one
# notice and exits. Settings come from the environment (the systemd unit sets the production values).
import json
import os
import subprocess
import sys
import time
import http.client
import urllib.parse

IMDS = os.environ.get("CAPA_WATCHER_IMDS_URL", "http://169.254.169.254").rstrip("/")
KUBECTL = os.environ.get("CAPA_WATCHER_KUBECTL", "kubectl")
AWS = os.environ.get("CAPA_WATCHER_AWS", "aws")
KUBECONFIG = os.environ.get("CAPA_WATCHER_KUBECONFIG", "/etc/kubernetes/kubelet.conf")
HOOK = os.environ.get("CAPA_WATCHER_LIFECYCLE_HOOK", "")
POLL_SECONDS = float(os.environ.get("CAPA_WATCHER_POLL_SECONDS", "5"))
MAX_POLLS = int(os.environ.get("CAPA_WATCHER_MAX_POLLS", "0"))  # 0: forever (tests bound it)
DRAIN_TIMEOUT = os.environ.get("CAPA_WATCHER_DRAIN_TIMEOUT", "90s")  # a spot notice gives two minutes
TOKEN_TTL = 21600
TIMEOUT = 2


def log(message):
    print("capa-termination-watcher: " + message, file=sys.stderr, flush=True)


class ImdsError(Exception):
    pass


class Imds:
    # Plain http.client: IMDS is a local HTTP endpoint and the script must need nothing beyond the standard library.
    def __init__(self):
        self.token = None
        self.expires = 0.0
        url = urllib.parse.urlsplit(IMDS)
        self.host, self.port = url.hostname, url.port or 80

    def _request(self, method, path, headers):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            connection.request(method, path, headers=headers)
            answer = connection.getresponse()
            return answer.status, answer.read().decode().strip()
        finally:
            connection.close()

    def _fresh_token(self):
        # Renewed well before it expires; a rejected token (401) also forces a new one.
        if self.token is None or time.monotonic() > self.expires:
            status, body = self._request(
                "PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL)}
            )
            if status != 200:
                raise ImdsError("IMDS refused a token: HTTP %d" % status)
            self.token = body
            self.expires = time.monotonic() + TOKEN_TTL / 2
        return self.token

    def get(self, path):
        """The body at path, or None when IMDS answers 404 (no such item: no notice)."""
        for attempt in (1, 2):
            status, body = self._request(
                "GET", "/latest/meta-data/" + path, {"X-aws-ec2-metadata-token": self._fresh_token()}
            )
            if status == 200:
                return body
            if status == 404:
                return None
            if status == 401 and attempt == 1:
                self.token = None
                continue
            raise ImdsError("IMDS answered HTTP %d for %s" % (status, path))
        return None


def run(argv):
    log("running " + " ".join(argv))
    done = subprocess.run(argv, check=False)
    if done.returncode != 0:
        log("%s exited with %d" % (argv[0], done.returncode))
    return done.returncode == 0


def drain(node):
    kubectl = [KUBECTL, "--kubeconfig", KUBECONFIG]
    run(kubectl + ["cordon", node])
    run(
        kubectl
        + ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=" + DRAIN_TIMEOUT]
    )


def complete_lifecycle_action(imds):
    instance_id = imds.get("instance-id")
    region = imds.get("placement/region")
    # Instance metadata tags are off by default, so the group comes from the Auto Scaling API.
    found = subprocess.run(
        [AWS, "autoscaling", "describe-auto-scaling-instances", "--region", region, "--instance-ids", instance_id,
         "--query", "AutoScalingInstances[0].AutoScalingGroupName", "--output", "text"],
        check=False, capture_output=True, text=True,
    )
    group = found.stdout.strip()
    if found.returncode != 0 or not group or group == "None":
        log("cannot find the auto scaling group of %s: %s" % (instance_id, found.stderr.strip()))
        return False
    return run(
        [AWS, "autoscaling", "complete-lifecycle-action", "--region", region, "--lifecycle-hook-name", HOOK,
         "--auto-scaling-group-name", group, "--instance-id", instance_id, "--lifecycle-action-result", "CONTINUE"]
    )


def notice(imds):
    """What is about to happen to the instance, or None."""
    action = imds.get("spot/instance-action")
    if action:
        try:
            detail = json.loads(action)
        except ValueError:
            detail = {"action": action}
        return "spot", "spot %s at %s" % (detail.get("action", "interruption"), detail.get("time", "soon"))
    if HOOK and imds.get("autoscaling/target-lifecycle-state") == "Terminated":
        return "scale-in", "auto scaling lifecycle state Terminated"
    return None


def main():
    imds = Imds()
    polls = 0
    while MAX_POLLS <= 0 or polls < MAX_POLLS:
        polls += 1
        try:
            found = notice(imds)
        except (OSError, ValueError, ImdsError, http.client.HTTPException) as error:
            # IMDS briefly unreachable or confused: try again next poll.
            log("metadata service: %s" % error)
            found = None
        if found:
            kind, what = found
            node = os.environ.get("CAPA_WATCHER_NODE_NAME") or imds.get("local-hostname")
            log("%s: draining node %s" % (what, node))
            drain(node)
            if kind == "scale-in":
                complete_lifecycle_action(imds)
            return 0
        time.sleep(POLL_SECONDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

UNIT_TEMPLATE = """[Unit]
Description=clusterapi.aws termination watcher (drains the node on spot interruption or scale-in)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
Environment=CAPA_WATCHER_POLL_SECONDS=%(poll_seconds)d
Environment=CAPA_WATCHER_LIFECYCLE_HOOK=%(lifecycle_hook)s
Environment=CAPA_WATCHER_KUBECONFIG=%(kubeconfig)s
ExecStart=/usr/bin/python3 %(watcher_path)s
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
"""
