"""The traffic client (cluster traffic): bounded load through a Service's EndpointSlices."""
import json
import os
import subprocess
import time

from conftest import CLUSTER_BIN, KUBECONFIG, wait_for
from test_cluster import create_ready_pod, ctr, pod_manifest, status_of


def service(core, ns, name="web"):
    core.create_namespaced_service(ns, {"metadata": {"name": name}, "spec": {
        "selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})


def web_pod(core, ns, name, image, grace=10):
    manifest = pod_manifest(name, [ctr("app", image, ports=[{"containerPort": 8080, "name": "http"}],
                                       readinessProbe={"httpGet": {"path": "/ready", "port": "http"},
                                                       "periodSeconds": 1})],
                            terminationGracePeriodSeconds=grace)
    manifest["metadata"]["labels"] = {"app": "web"}
    return create_ready_pod(core, ns, manifest)


def start_traffic(ns, tmp_path, *args):
    out = tmp_path / "traffic.json"
    proc = subprocess.Popen([CLUSTER_BIN, "traffic", "--kubeconfig", KUBECONFIG, "--namespace", ns,
                             "--service", "web", "--out", str(out), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, out


def finish(proc, out, timeout=60):
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, stderr
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def restart_in_place(core, ns, name, image):
    core.patch_namespaced_pod(name, ns, {"spec": {"containers": [{"name": "app", "image": image}]}})
    wait_for(f"{name} restarted", lambda: status_of(core.read_namespaced_pod(name, ns), "app").restart_count == 1, 60)


def test_traffic_is_bounded_and_reports_by_pod_and_image(core, ns, tmp_path):
    service(core, ns)
    for n in ("a", "b"):
        web_pod(core, ns, n, "registry.example/web:1.0")
    t0 = time.time()
    proc, out = start_traffic(ns, tmp_path, "--rate", "50", "--count", "100", "--duration", "30s")
    rep = finish(proc, out)
    assert time.time() - t0 < 15
    assert rep["sent"] == 100 and rep["ok"] == 100 and rep["failed"] == 0
    assert set(rep["by_pod"]) == {"a", "b"}
    assert rep["by_image"] == {"registry.example/web:1.0": 100}
    assert sum(b["sent"] for b in rep["per_second"]) == 100


def test_restart_without_drain_fails_requests_and_with_drain_none(core, ns, tmp_path):
    """The propagation delay (1 s) is what drain must cover: without it, requests fail."""
    service(core, ns)
    for n in ("a", "b", "c"):
        web_pod(core, ns, n, "registry.example/web:1.0")
    proc, out = start_traffic(ns, tmp_path, "--rate", "50", "--duration", "8s")
    time.sleep(2)
    # -slow2: the new container takes 2 s to start, while the endpoint is still in use.
    restart_in_place(core, ns, "a", "registry.example/web:2.0-slow2")
    rep = finish(proc, out)
    assert rep["failed"] > 0, rep
    # What a restart without a drain does to requests: refused while nothing listens, reset when the process
    # stops with one in flight, or no answer in time.
    assert set(rep["failures"]) <= {"connection refused", "connection reset", "timeout"}, rep["failures"]
    assert rep["by_pod"]["a"]["failed"] == rep["failed"]

    # The same with -drain8: the app keeps serving 8 s after SIGTERM while its readiness path fails, so the endpoint
    # leaves before the process exits. Idle, the endpoint leaves in about 2 s (the probe period, the EndpointSlice
    # write, the client's delay); on a loaded machine (make test's other lane beside this suite) it once took 4 s,
    # which a 4 s drain did not cover.
    for n in ("b", "c"):
        core.patch_namespaced_pod(n, ns, {"spec": {"containers": [{"name": "app",
                                                                  "image": "registry.example/web:1.0-drain8"}]}})
    for n in ("b", "c"):
        wait_for(f"{n} ready again", lambda n=n: status_of(core.read_namespaced_pod(n, ns), "app").ready
                 and status_of(core.read_namespaced_pod(n, ns), "app").restart_count == 1, 60)
    proc, out = start_traffic(ns, tmp_path, "--rate", "50", "--duration", "22s")
    time.sleep(2)
    restart_in_place(core, ns, "b", "registry.example/web:2.0-drain8-slow2")
    rep = finish(proc, out)
    assert rep["failed"] == 0, rep
    assert rep["by_image"].get("registry.example/web:2.0-drain8-slow2", 0) > 0


def test_traffic_refuses_bad_arguments():
    r = subprocess.run([CLUSTER_BIN, "traffic", "--service", "web", "--rate", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--rate" in r.stderr
    r = subprocess.run([CLUSTER_BIN, "traffic"], capture_output=True, text=True)
    assert r.returncode == 2 and "--service" in r.stderr
    assert os.path.exists(CLUSTER_BIN)
