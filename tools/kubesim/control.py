"""The simulator's control API (HTTP on 127.0.0.1, JSON): what tests and ``tools/kubesim_ctl.py`` call.

==========================================  ===========================================================================
``GET  /healthz``                           ``{"ok": true}``
``GET  /state``                             clusters (API server, instances, etcd processes, quorum), knobs, config,
                                            ``proxy``: the URL of the CONNECT proxy to every cluster (proxy.py)
``POST /reset``                             stop every cluster (etcd members killed), forget knobs, journal, config
``GET|POST /config``                        read / change ``time_scale``, ``delays``, ``cni`` rule, ...
``POST /clusters``                          ``{"name", "kind": "kubeadm"|"eks", "endpoint"?, "anonymous_auth"?}``:
                                            watch a cluster; answers its API server ``port`` and ``url`` at once
``GET|DELETE /clusters/<n>``                a cluster's summary / stop watching it
``POST /clusters/<n>/credentials``          ``{"user", "groups", "ca": "cluster"|"etcd"}`` -> a client certificate
                                            signed by the cluster's CA (or etcd CA) and the CA certificate
``POST /clusters/<n>/objects``              ``{"objects": [...]}``: create (or replace) objects as ``system:masters``
``GET  /clusters/<n>/objects``              ``?apiVersion=v1&kind=Pod&namespace=x``
``GET  /clusters/<n>/etcd``                 member list + leader as etcd reports them, quorum monitor summary
``POST /clusters/<n>/etcd/<member>``        ``{"power": "off"|"on"}`` (SIGKILL / restart from its data) or
                                            ``{"frozen": true|false}`` (SIGSTOP / SIGCONT: alive but unhealthy)
``GET  /clusters/<n>/usage``                RSS and CPU seconds of the cluster's etcd processes
``GET  /journal``                           ``?since=<epoch>&cluster=<n>&source=<s>&moto=0|1``: the merged timeline
``GET|POST|DELETE /knobs``                  per-instance knobs (``instance_id`` or ``name_prefix`` + values)
``POST /_nodes/<instance>/kubeadm``         the node-side ``kubeadm`` stand-in calls this (internal)
==========================================  ===========================================================================
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from .sim import Simulator
from .store import ApiError

EXECUTOR = ThreadPoolExecutor(max_workers=64, thread_name_prefix="kubesim-control")


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(body, default=str).encode(), content_type="application/json")


def build_app(sim: Simulator) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    routes = web.RouteTableDef()

    async def blocking(fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(EXECUTOR, fn, *args)

    def cluster_of(request: web.Request) -> Any:
        name = request.match_info["name"]
        cluster = sim.clusters.get(name)
        if cluster is None:
            raise web.HTTPNotFound(
                text=json.dumps({"error": f"cluster {name} is not registered"}), content_type="application/json"
            )
        return cluster

    @routes.get("/healthz")
    async def healthz(request: web.Request) -> web.Response:
        return _json({"ok": True})

    @routes.get("/state")
    async def state(request: web.Request) -> web.Response:
        return _json(await blocking(sim.state))

    @routes.post("/reset")
    async def reset(request: web.Request) -> web.Response:
        await blocking(sim.reset)
        return _json({"reset": True})

    @routes.get("/config")
    async def get_config(request: web.Request) -> web.Response:
        return _json(sim.config)

    @routes.post("/config")
    async def set_config(request: web.Request) -> web.Response:
        try:
            return _json(sim.set_config(await request.json()))
        except ValueError as exc:
            return _json({"error": str(exc)}, 400)

    @routes.post("/clusters")
    async def register(request: web.Request) -> web.Response:
        body = await request.json()
        name = body.pop("name", None)
        if not name:
            return _json({"error": "name is required"}, 400)
        kind = body.pop("kind", "kubeadm")
        cluster = await blocking(lambda: sim.register(name, kind, **body))
        if kind == "eks":
            if sim.eks is None:
                return _json({"error": "EKS simulation is off (--no-eks)"}, 400)
            if cluster.eks is None:
                await blocking(sim.eks.attach_cluster, cluster)
        return _json(cluster.summary(), 201)

    @routes.get("/clusters/{name}")
    async def get_cluster(request: web.Request) -> web.Response:
        return _json(cluster_of(request).summary())

    @routes.delete("/clusters/{name}")
    async def delete_cluster(request: web.Request) -> web.Response:
        cluster_of(request)
        await blocking(sim.unregister, request.match_info["name"])
        return _json({"deleted": True})

    @routes.post("/clusters/{name}/credentials")
    async def credentials(request: web.Request) -> web.Response:
        cluster = cluster_of(request)
        body = await request.json()
        ca = cluster.etcd_ca if body.get("ca") == "etcd" else cluster.cluster_ca
        if ca is None:
            return _json({"error": "the cluster has no such CA yet (no kubeadm init)"}, 409)
        cert, key = await blocking(lambda: ca.sign(body.get("user", "kubesim"), body.get("groups") or [], client=True))
        return _json({"cert": cert, "key": key, "ca": ca.cert_pem})

    @routes.post("/clusters/{name}/objects")
    async def create_objects(request: web.Request) -> web.Response:
        cluster = cluster_of(request)
        body = await request.json()
        objs = body.get("objects", body) if isinstance(body, dict) else body
        results = []
        for obj in objs:
            res = cluster.api.table.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
            if res is None:
                results.append({"error": f"no resource for {obj.get('apiVersion')}/{obj.get('kind')}"})
                continue
            ns = obj.get("metadata", {}).get("namespace", "default") if res.namespaced else ""
            try:
                results.append(cluster.api.store.create(res, ns, obj, "kubesim-control"))
            except ApiError as exc:
                if exc.code == 409 and body.get("replace") if isinstance(body, dict) else False:
                    results.append(cluster.api.store.update(res, ns, obj["metadata"]["name"], obj, "kubesim-control"))
                else:
                    results.append({"error": exc.message, "code": exc.code})
        return _json({"results": results}, 201)

    @routes.get("/clusters/{name}/objects")
    async def list_objects(request: web.Request) -> web.Response:
        cluster = cluster_of(request)
        res = cluster.api.table.by_kind(request.query.get("apiVersion", "v1"), request.query.get("kind", ""))
        if res is None:
            return _json({"error": "unknown kind"}, 404)
        return _json(cluster.api.store.items(res, request.query.get("namespace")))

    @routes.get("/clusters/{name}/etcd")
    async def etcd_state(request: web.Request) -> web.Response:
        cluster = cluster_of(request)
        view = await blocking(cluster.etcd_view)
        view["quorum"] = cluster.monitor.summary() if cluster.monitor else None
        view["journal"] = sim.journal.entries(cluster=cluster.name, source="etcd")
        return _json(view)

    @routes.post("/clusters/{name}/etcd/{member}")
    async def etcd_member(request: web.Request) -> web.Response:
        cluster = cluster_of(request)
        body = await request.json()
        name = request.match_info["member"]
        runtime = next((n for n in cluster.nodes.values() if n.member is not None and n.member.name == name), None)
        if runtime is None:
            return _json({"error": f"no etcd member {name}"}, 404)
        member = runtime.member

        def act() -> dict[str, Any]:
            if body.get("power") == "off":
                member.kill()
                sim.journal.record(
                    "node",
                    "etcd-killed",
                    cluster=cluster.name,
                    node=runtime.name,
                    member=name,
                    why="control API power off",
                )
            elif body.get("power") == "on":
                from . import etcd as etcd_mod

                pki_dir = runtime.root / "etc/kubernetes/pki/etcd"
                member.start(
                    etcd_mod.TLSFiles(pki_dir / "ca.crt", pki_dir / "server.crt", pki_dir / "server.key"),
                    f"{member.name}={member.peer_url}",
                    "existing",
                    cluster.token,
                )
                sim.journal.record("node", "etcd-restarted", cluster=cluster.name, node=runtime.name, member=name)
            if "frozen" in body:
                member.freeze(bool(body["frozen"]))
                sim.journal.record(
                    "node",
                    "etcd-frozen" if body["frozen"] else "etcd-thawed",
                    cluster=cluster.name,
                    node=runtime.name,
                    member=name,
                )
            return runtime.summary()

        return _json(await blocking(act))

    @routes.post("/clusters/{name}/etcd-kv")
    async def etcd_kv(request: web.Request) -> web.Response:
        """Keys written and read through the cluster's real etcd (a test's own data, as an application's objects
        would be): ``{"put": {key: value}}`` and/or ``{"get": [key, ...]}`` -> ``{"values": {key: value|null}}``."""
        cluster = cluster_of(request)
        body = await request.json()

        def act() -> dict[str, Any]:
            from . import etcd as etcd_mod

            gateway = cluster.gateway
            if gateway is None:
                raise etcd_mod.EtcdError("no etcd yet")
            errors = []
            for endpoint in cluster.live_endpoints():
                try:
                    for key, value in (body.get("put") or {}).items():
                        gateway.put(endpoint, key, value, timeout=3.0)
                    return {"values": {key: gateway.get(endpoint, key, timeout=3.0) for key in body.get("get") or []}}
                except etcd_mod.EtcdError as exc:
                    errors.append(str(exc))
            raise etcd_mod.EtcdError("; ".join(errors) or "no live etcd member")

        try:
            return _json(await blocking(act))
        except Exception as exc:  # noqa: BLE001 - the test sees etcd's answer
            return _json({"error": str(exc)}, 503)

    @routes.post("/clusters/{name}/nodes/{node}/kubelet")
    async def kubelet(request: web.Request) -> web.Response:
        """``{"running": false}``: the node's kubelet stops (crashed, or the machine hangs while EC2 still reports it
        running and its status checks ok): it no longer posts the Node's status, and after the node monitor grace
        period the controller manager marks the Node ``Ready=Unknown``. ``{"running": true}`` starts it again."""
        cluster = cluster_of(request)
        body = await request.json()
        name = request.match_info["node"]
        runtime = cluster.node_runtime(name)
        if runtime is None:
            return _json({"error": f"no registered node {name}"}, 404)
        runtime.kubelet_alive = bool(body.get("running"))
        sim.journal.record(
            "node",
            "kubelet-started" if runtime.kubelet_alive else "kubelet-stopped",
            cluster=cluster.name,
            node=name,
            instance=runtime.instance_id,
            why="control API",
        )
        return _json(runtime.summary())

    @routes.post("/clusters/{name}/nodes/{node}/certificates")
    async def certificates(request: web.Request) -> web.Response:
        """``{"expires_in_days": 20}``: the node's kube-apiserver serving certificate (kubeadm's, one year from the
        join) now expires that soon - a cluster left alone for most of a year, as KCP's certificate rollout sees it."""
        cluster = cluster_of(request)
        body = await request.json()
        name = request.match_info["node"]
        try:
            cluster.renew_apiserver_certificate(name, float(body["expires_in_days"]))
        except KeyError:
            return _json({"error": f"no registered node {name}"}, 404)
        sim.journal.record("node", "certificates-expire", cluster=cluster.name, node=name, days=body["expires_in_days"])
        runtime = cluster.node_runtime(name)
        return _json(runtime.summary() if runtime else {})

    @routes.get("/clusters/{name}/usage")
    async def usage(request: web.Request) -> web.Response:
        cluster = cluster_of(request)
        return _json(
            {
                m.name: {
                    "rss_kib": m.rss_kib(),
                    "cpu_seconds": m.cpu_seconds(),
                    "pid": m.process.pid if m.running and m.process else None,
                }
                for m in cluster.members()
            }
        )

    @routes.get("/journal")
    async def journal(request: web.Request) -> web.Response:
        q = request.query
        since = float(q["since"]) if q.get("since") else None
        entries = await blocking(lambda: sim.timeline(since, q.get("cluster"), q.get("moto", "1") != "0"))
        if q.get("source"):
            entries = [e for e in entries if e.get("source") == q["source"]]
        return _json(entries)

    @routes.get("/knobs")
    async def get_knobs(request: web.Request) -> web.Response:
        return _json(sim.knobs)

    @routes.post("/knobs")
    async def set_knob(request: web.Request) -> web.Response:
        try:
            return _json(sim.set_knob(await request.json()), 201)
        except ValueError as exc:
            return _json({"error": str(exc)}, 400)

    @routes.delete("/knobs")
    async def clear_knobs(request: web.Request) -> web.Response:
        sim.knobs.clear()
        return _json({"cleared": True})

    @routes.post("/_nodes/{instance}/{tool}")
    async def node_tool(request: web.Request) -> web.Response:
        body = await request.json()
        instance, tool = request.match_info["instance"], request.match_info["tool"]
        runner = {"kubeadm": sim.run_kubeadm, "ctr": sim.run_ctr}.get(tool, sim.run_nodeadm)
        rc, output = await blocking(runner, instance, list(body.get("args") or []))
        return _json({"rc": rc, "output": output})

    app.add_routes(routes)
    return app
