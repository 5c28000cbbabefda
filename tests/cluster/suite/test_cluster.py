"""Proves that the local cluster does what the collection relies on, with the real components."""
import json
import os
import subprocess
import time
import uuid

import pytest
from conftest import CLUSTER_BIN, MINOR, VERSION, cri, wait_for

from kubernetes import client


def pod_manifest(name, containers, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": containers, **spec}}


def ctr(name, image, **kw):
    return {"name": name, "image": image, **kw}


def status_of(pod, name):
    for s in (pod.status.container_statuses or []) + (pod.status.init_container_statuses or []):
        if s.name == name:
            return s
    return None


def running_ready(core, ns, name):
    def check():
        p = core.read_namespaced_pod(name, ns)
        conds = {c.type: c.status for c in (p.status.conditions or [])}
        return p if p.status.phase == "Running" and conds.get("Ready") == "True" else None
    return check


def create_ready_pod(core, ns, manifest, timeout=60):
    core.create_namespaced_pod(ns, manifest)
    return wait_for(f"pod {manifest['metadata']['name']} Ready", running_ready(core, ns, manifest["metadata"]["name"]),
                    timeout)


def waiting_reason(core, ns, name, container):
    def check():
        s = status_of(core.read_namespaced_pod(name, ns), container)
        if s and s.state and s.state.waiting:
            return s.state.waiting.reason
        return None
    return check


def test_nodes_ready_at_version(core, api_client, state):
    nodes = core.list_node().items
    assert len(nodes) == len([c for c in state["components"] if c["name"].startswith("node-")]) >= 3
    for n in nodes:
        ready = [c for c in n.status.conditions if c.type == "Ready"][0]
        assert ready.status == "True", n.metadata.name
        assert n.status.node_info.kubelet_version == VERSION
    assert client.VersionApi(api_client).get_code().git_version == VERSION


def test_deployment_gets_distinct_ips(apps, core, ns):
    apps.create_namespaced_deployment(ns, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [ctr("app", "registry.example/web:1.0")]}}}})
    wait_for("deployment web 6/6 ready",
             lambda: (apps.read_namespaced_deployment("web", ns).status.ready_replicas or 0) == 6, 90)
    pods = core.list_namespaced_pod(ns, label_selector="app=web").items
    ips = {p.status.pod_ip for p in pods}
    assert len(pods) == 6 and len(ips) == 6, ips
    assert len({p.spec.node_name for p in pods}) >= 2


def test_image_change_restarts_only_that_container(core, ns):
    before = create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/app:1.0"),
                                                            ctr("log", "registry.example/log:1.0")]))
    app0, log0 = status_of(before, "app"), status_of(before, "log")
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "log", "image": "registry.example/log:2.0"}]}})

    def restarted():
        p = core.read_namespaced_pod("p", ns)
        s = status_of(p, "log")
        return p if s.restart_count == 1 and s.ready and s.container_id != log0.container_id else None
    after = wait_for("log container restarted", restarted, 60)
    assert after.metadata.uid == before.metadata.uid
    assert after.status.pod_ip == before.status.pod_ip
    assert status_of(after, "log").image == "registry.example/log:2.0"
    assert status_of(after, "app").container_id == app0.container_id
    assert status_of(after, "app").restart_count == 0
    assert status_of(after, "log").image_id != log0.image_id


def test_sidecar_image_change_restarts_only_the_sidecar(core, ns):
    before = create_ready_pod(core, ns, pod_manifest(
        "s", [ctr("app", "registry.example/app:1.0")],
        initContainers=[ctr("proxy", "registry.example/proxy:1.0", restartPolicy="Always")]))
    app0, proxy0 = status_of(before, "app"), status_of(before, "proxy")
    assert proxy0.started and proxy0.state.running
    core.patch_namespaced_pod("s", ns, {"spec": {"initContainers": [{"name": "proxy", "image": "registry.example/proxy:2.0"}]}})

    def restarted():
        p = core.read_namespaced_pod("s", ns)
        s = status_of(p, "proxy")
        return p if s.container_id != proxy0.container_id and s.state.running and s.started else None
    after = wait_for("sidecar restarted", restarted, 60)
    assert status_of(after, "proxy").restart_count == 1
    assert status_of(after, "app").container_id == app0.container_id
    assert after.metadata.uid == before.metadata.uid and after.status.pod_ip == before.status.pod_ip


def resources(cpu_req, cpu_lim, mem_req, mem_lim):
    return {"requests": {"cpu": cpu_req, "memory": mem_req}, "limits": {"cpu": cpu_lim, "memory": mem_lim}}


def test_resize_completes_without_restart(core, ns):
    before = create_ready_pod(core, ns, pod_manifest("r", [ctr("app", "registry.example/app:1.0",
                                                              resources=resources("100m", "200m", "64Mi", "128Mi"))]))
    cid = status_of(before, "app").container_id
    core.patch_namespaced_pod_resize("r", ns, {"spec": {"containers": [
        {"name": "app", "resources": resources("300m", "500m", "64Mi", "128Mi")}]}})

    def done():
        p = core.read_namespaced_pod("r", ns)
        s = status_of(p, "app")
        conds = {c.type for c in (p.status.conditions or [])}
        ok = (s.resources and s.resources.requests.get("cpu") == "300m" and s.resources.limits.get("cpu") == "500m"
              and s.allocated_resources.get("cpu") == "300m"
              and not conds & {"PodResizePending", "PodResizeInProgress"}
              # status.observedGeneration: beta (on by default) since 1.34, alpha and off in 1.33
              and (MINOR < 34 or (p.status.observed_generation or 0) >= p.metadata.generation))
        return p if ok else None
    after = wait_for("resize to 300m/500m", done, 60)
    assert status_of(after, "app").container_id == cid
    assert status_of(after, "app").restart_count == 0
    assert after.metadata.generation > before.metadata.generation


def test_resize_with_restart_policy_restarts_container(core, ns):
    before = create_ready_pod(core, ns, pod_manifest("rr", [ctr(
        "app", "registry.example/app:1.0", resources=resources("100m", "100m", "64Mi", "64Mi"),
        resizePolicy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}])]))
    cid = status_of(before, "app").container_id
    core.patch_namespaced_pod_resize("rr", ns, {"spec": {"containers": [
        {"name": "app", "resources": resources("100m", "100m", "128Mi", "128Mi")}]}})

    def done():
        p = core.read_namespaced_pod("rr", ns)
        s = status_of(p, "app")
        return p if (s.resources and s.resources.limits.get("memory") == "128Mi" and s.ready
                     and s.container_id != cid) else None
    after = wait_for("memory resize with restart", done, 60)
    assert status_of(after, "app").restart_count == 1
    assert after.metadata.uid == before.metadata.uid


def test_resize_beyond_node_allocatable_is_refused(core, ns):
    # Since 1.36 the API server's PodResize admission refuses requests above the node's allocatable;
    # before, the API server stores them and the kubelet marks the resize Infeasible.
    create_ready_pod(core, ns, pod_manifest("big", [ctr("app", "registry.example/app:1.0",
                                                       resources=resources("100m", "100m", "64Mi", "64Mi"))]))
    patch = {"spec": {"containers": [{"name": "app", "resources": resources("64", "64", "64Mi", "64Mi")}]}}
    if MINOR < 36:
        core.patch_namespaced_pod_resize("big", ns, patch)

        def infeasible():
            for c in core.read_namespaced_pod("big", ns).status.conditions or []:
                if c.type == "PodResizePending" and c.reason == "Infeasible":
                    return c
            return None
        cond = wait_for("PodResizePending/Infeasible", infeasible, 30)
        assert "cpu" in (cond.message or "").lower()
        return
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod_resize("big", ns, patch)
    assert err.value.status == 403
    body = json.loads(err.value.body)
    assert body["details"]["causes"][0]["reason"] == "NodeCapacity"
    assert "node didn't have enough allocatable resources: cpu" in body["message"]


def test_resize_beyond_free_capacity_is_deferred(core, ns):
    pod = create_ready_pod(core, ns, pod_manifest("d", [ctr("app", "registry.example/app:1.0",
                                                           resources=resources("100m", "100m", "64Mi", "64Mi"))]))
    node = pod.spec.node_name
    allocatable = int(core.read_node(node).status.allocatable["cpu"])
    create_ready_pod(core, ns, pod_manifest("filler", [ctr("app", "registry.example/app:1.0", resources=resources(
        f"{allocatable * 1000 - 1500}m", f"{allocatable * 1000 - 1500}m", "64Mi", "64Mi"))], nodeName=node))
    core.patch_namespaced_pod_resize("d", ns, {"spec": {"containers": [
        {"name": "app", "resources": resources("2", "2", "64Mi", "64Mi")}]}})

    def deferred():
        for c in core.read_namespaced_pod("d", ns).status.conditions or []:
            if c.type == "PodResizePending" and c.reason == "Deferred":
                return c
        return None
    cond = wait_for("PodResizePending/Deferred", deferred, 30)
    assert "cpu" in (cond.message or "").lower()
    core.delete_namespaced_pod("filler", ns, grace_period_seconds=0)

    def done():
        s = status_of(core.read_namespaced_pod("d", ns), "app")
        return s.resources and s.resources.requests.get("cpu") == "2"
    wait_for("deferred resize completes once capacity frees up", done, 240)


@pytest.fixture
def static_cpu_node(core, state):
    """An extra node whose kubelet reports the static CPU manager policy; removed afterwards."""
    name = "static-" + uuid.uuid4().hex[:5]
    port = int(os.environ.get("KUBELET_PORT_BASE", "11250")) + 49
    d = os.path.join(state["dir"], "nodes", name)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, INPLACE_LOCAL_CLUSTER_DIR=state["dir"])
    with open(os.path.join(state["dir"], "logs", name + ".log"), "ab") as log:
        proc = subprocess.Popen([CLUSTER_BIN, "node", "--name", name, "--index", "15", "--kubeconfig",
                                 os.path.join(state["dir"], "admin.kubeconfig"), "--dir", d, "--port", str(port),
                                 "--cpu-manager-policy", "static"], env=env, stdout=log, stderr=log,
                                start_new_session=True)
    try:
        def ready():
            try:
                n = core.read_node(name)
            except client.ApiException:
                return False
            return any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
        wait_for(f"node {name} Ready", ready, 60)
        yield name
    finally:
        proc.terminate()
        proc.wait(30)
        core.delete_node(name)


def test_guaranteed_cpu_resize_on_static_cpu_manager_node_is_infeasible(core, ns, static_cpu_node):
    create_ready_pod(core, ns, pod_manifest("g", [ctr("app", "registry.example/app:1.0",
                                                     resources=resources("1", "1", "64Mi", "64Mi"))],
                                            nodeName=static_cpu_node))
    core.patch_namespaced_pod_resize("g", ns, {"spec": {"containers": [
        {"name": "app", "resources": resources("2", "2", "64Mi", "64Mi")}]}})

    def infeasible():
        for c in core.read_namespaced_pod("g", ns).status.conditions or []:
            if c.type == "PodResizePending" and c.reason == "Infeasible":
                return c
        return None
    cond = wait_for("PodResizePending/Infeasible", infeasible, 30)
    assert "static" in cond.message


def test_readiness_gate_drives_ready_and_endpoints(core, discovery, ns):
    core.create_namespaced_service(ns, {"metadata": {"name": "g"}, "spec": {"selector": {"app": "g"},
                                                                              "ports": [{"port": 80}]}})
    core.create_namespaced_pod(ns, pod_manifest("g", [ctr("app", "registry.example/app:1.0")],
                                                readinessGates=[{"conditionType": "inplace.k8s/ready"}]))

    def set_gate(value):
        core.patch_namespaced_pod_status("g", ns, {"status": {"conditions": [
            {"type": "inplace.k8s/ready", "status": value, "reason": "Test"}]}})

    def ready_is(value):
        def check():
            p = core.read_namespaced_pod("g", ns)
            return {c.type: c.status for c in p.status.conditions or []}.get("Ready") == value
        return check

    def endpoint_ready_is(value):
        def check():
            for s in discovery.list_namespaced_endpoint_slice(ns, label_selector="kubernetes.io/service-name=g").items:
                for e in s.endpoints or []:
                    if e.target_ref and e.target_ref.name == "g":
                        return e.conditions.ready is value
            return False
        return check

    wait_for("pod running", lambda: core.read_namespaced_pod("g", ns).status.phase == "Running", 60)
    # Without the gate's condition, the pod is not Ready even though its container is.
    time.sleep(2)
    assert ready_is("False")()
    set_gate("True")
    wait_for("Ready True", ready_is("True"), 30)
    wait_for("endpoint ready", endpoint_ready_is(True), 30)
    set_gate("False")
    wait_for("Ready False", ready_is("False"), 30)
    wait_for("endpoint not ready", endpoint_ready_is(False), 30)
    set_gate("True")
    wait_for("endpoint ready again", endpoint_ready_is(True), 30)


def test_pullfail_image(core, ns):
    core.create_namespaced_pod(ns, pod_manifest("pf", [ctr("app", "registry.example/app:1.0-pullfail")]))
    wait_for("ErrImagePull", lambda: waiting_reason(core, ns, "pf", "app")() == "ErrImagePull", 30)
    wait_for("ImagePullBackOff", lambda: waiting_reason(core, ns, "pf", "app")() == "ImagePullBackOff", 60)
    s = status_of(core.read_namespaced_pod("pf", ns), "app")
    assert "pullfail" in s.state.waiting.message


def test_crash_image(core, ns):
    core.create_namespaced_pod(ns, pod_manifest("cr", [ctr("app", "registry.example/app:1.0-crash")]))
    wait_for("CrashLoopBackOff", lambda: waiting_reason(core, ns, "cr", "app")() == "CrashLoopBackOff", 60)
    s = status_of(core.read_namespaced_pod("cr", ns), "app")
    assert s.restart_count >= 1
    assert s.last_state.terminated.exit_code == 1


def test_slow_image_delays_start(core, ns):
    t0 = time.time()
    core.create_namespaced_pod(ns, pod_manifest("sl", [ctr("app", "registry.example/app:1.0-slow4")]))
    wait_for("slow pod ready", running_ready(core, ns, "sl"), 60)
    assert time.time() - t0 >= 4


def test_cri_stop_restarts_container(core, ns, state):
    before = create_ready_pod(core, ns, pod_manifest("c", [ctr("app", "registry.example/app:1.0")]))
    node = before.spec.node_name
    socket = [c for c in state["components"] if c["name"] == node][0]["criSocket"]
    rows = json.loads(cri(socket, "ps", "--pod", "c", "--namespace", ns))
    assert len(rows) == 1 and rows[0]["State"] == "CONTAINER_RUNNING"
    cid = rows[0]["ID"]
    assert status_of(before, "app").container_id == "inplace-fake-cri://" + cid or \
        status_of(before, "app").container_id.endswith(cid)
    cri(socket, "stop", cid)

    def restarted():
        p = core.read_namespaced_pod("c", ns)
        s = status_of(p, "app")
        return p if s.restart_count == 1 and s.ready else None
    after = wait_for("container restarted after CRI stop", restarted, 60)
    assert after.metadata.uid == before.metadata.uid and after.status.pod_ip == before.status.pod_ip


def test_plain_init_container_completes_before_app_starts(core, ns):
    pod = create_ready_pod(core, ns, pod_manifest(
        "i", [ctr("app", "registry.example/app:1.0")],
        initContainers=[ctr("migrate", "registry.example/migrate:1.0"),
                        ctr("proxy", "registry.example/proxy:1.0", restartPolicy="Always")]))
    migrate, proxy, app = (status_of(pod, n) for n in ("migrate", "proxy", "app"))
    assert migrate.state.terminated.exit_code == 0 and migrate.state.terminated.reason == "Completed"
    assert proxy.state.running and app.state.running
    assert app.state.running.started_at >= migrate.state.terminated.finished_at
