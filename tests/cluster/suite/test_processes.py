"""Containers are processes: HTTP at the pod IP, probes run by the kubelet, lifecycle hooks,
signals, exec and logs through the API server, and the test bed's network namespaces."""
import ipaddress
import subprocess
import time
import urllib.request

from conftest import wait_for
from kubernetes import client
from kubernetes.stream import stream
from test_cluster import create_ready_pod, ctr, pod_manifest, running_ready, status_of

BENCH_NET = ipaddress.ip_network("198.18.0.0/15")


def get(ip, path, port=8080):
    """One bounded HTTP GET to a pod IP (inside the test bed's network)."""
    assert ipaddress.ip_address(ip) in BENCH_NET, ip
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def logs(core, ns, name, container="app", previous=False):
    return core.read_namespaced_pod_log(name, ns, container=container, previous=previous)


def exec_in(core, ns, name, command, container="app"):
    return stream(core.connect_get_namespaced_pod_exec, name, ns, container=container, command=command,
                  stderr=True, stdin=False, stdout=True, tty=False, _request_timeout=30)


def netns_list():
    return subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, text=True).stdout


def restarts(core, ns, name, container="app"):
    s = status_of(core.read_namespaced_pod(name, ns), container)
    return s.restart_count if s else -1


def http_port():
    return [{"containerPort": 8080, "name": "http"}]


def test_container_serves_http_at_its_pod_ip_and_logs_requests(core, ns):
    image = "registry.example/web:1.0"
    pod = create_ready_pod(core, ns, pod_manifest("p", [ctr("app", image, ports=http_port())]))
    ip = pod.status.pod_ip
    assert ipaddress.ip_address(ip) in BENCH_NET
    assert not ipaddress.ip_address(ip).is_loopback
    code, body = get(ip, "/any/path?x=1")
    assert code == 200
    assert body == f"pod={ns}/p container=app image={image}\n"
    # The pod's network namespace is the test bed's, named after the pod IP.
    assert f"-{ip}" in netns_list()
    text = wait_for("the request in the container log", lambda: (lambda t: t if "GET /any/path" in t else None)(
        logs(core, ns, "p")), 10)
    assert "started: pod " + ns + "/p container app image " + image in text


def test_pod_network_namespace_is_removed_with_the_pod(core, ns):
    ip = create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0")])).status.pod_ip
    core.delete_namespaced_pod("p", ns)
    wait_for(f"network namespace of {ip} removed", lambda: f"-{ip} " not in netns_list() + " ", 60)


def test_readiness_probe_waits_for_ready_tag(core, ns):
    core.create_namespaced_pod(ns, pod_manifest("p", [ctr(
        "app", "registry.example/web:1.0-ready3", ports=http_port(),
        readinessProbe={"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1})]))
    running = wait_for("container running", lambda: (lambda s: s if s and s.state.running else None)(
        status_of(core.read_namespaced_pod("p", ns), "app")), 60)
    started = running.state.running.started_at
    assert not running.ready
    pod = wait_for("pod Ready", running_ready(core, ns, "p"), 30)
    ready_at = [c for c in pod.status.conditions if c.type == "Ready"][0].last_transition_time
    # -ready3: /ready answers 503 for 3 s after start; the kubelet's prober saw it.
    assert (ready_at - started).total_seconds() >= 2.5, (started, ready_at)
    assert ": 503" in logs(core, ns, "p") and "GET /ready" in logs(core, ns, "p")


def test_liveness_tcp_and_startup_exec_probes_pass(core, ns):
    pod = create_ready_pod(core, ns, pod_manifest("p", [ctr(
        "app", "registry.example/web:1.0", ports=http_port(),
        startupProbe={"exec": {"command": ["sh", "-c", "kill -0 1"]}, "periodSeconds": 1},
        livenessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 1})]))
    assert status_of(pod, "app").started
    time.sleep(3)
    assert restarts(core, ns, "p") == 0


def test_failing_exec_liveness_probe_restarts_the_container(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr(
        "app", "registry.example/web:1.0",
        livenessProbe={"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1})]))
    wait_for("a restart by the liveness probe", lambda: restarts(core, ns, "p") >= 1, 30)


def unhealthy_events(core, ns, name):
    """The messages of the kubelet's Unhealthy events (probe failures) of pod ``name``."""
    return [e.message for e in core.list_namespaced_event(
        ns, field_selector=f"involvedObject.name={name},reason=Unhealthy").items]


def test_probes_fail_where_the_image_serves_nothing(core, ns):
    # The app serves the ports its image serves (the declared ones, or -portN) and 404 on its health
    # paths with -nohealth: probes elsewhere fail, and the kubelet records why, as on a real node.
    probe = {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1}
    pods = {
        "moved": (ctr("app", "registry.example/web:2.0-port8081", ports=http_port(), readinessProbe=probe),
                  "connect: connection refused"),
        "undeclared": (ctr("app", "registry.example/web:1.0",
                           readinessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 1}),
                       "connect: connection refused"),
        "nohealth": (ctr("app", "registry.example/web:2.0-nohealth", ports=http_port(), readinessProbe=probe),
                     "HTTP probe failed with statuscode: 404"),
    }
    for name, (container, _) in pods.items():
        core.create_namespaced_pod(ns, pod_manifest(name, [container]))
    for name, (_, why) in pods.items():
        failed = wait_for(f"{name}: the kubelet's Unhealthy event ({why})", lambda name=name, why=why: [
            m for m in unhealthy_events(core, ns, name) if m.startswith("Readiness probe failed") and why in m], 60)
        # The kubelet's status of the pod may follow its event by a sync: waited for, then judged.
        wait_for(f"{name}: its container's status says running", lambda name=name: getattr(getattr(
            status_of(core.read_namespaced_pod(name, ns), "app"), "state", None), "running", None), 30)
        pod = core.read_namespaced_pod(name, ns)
        state = status_of(pod, "app")
        assert state.state.running and not state.ready, (name, failed, state)
        assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "False", (name, failed)
    moved = core.read_namespaced_pod("moved", ns).status.pod_ip
    assert get(moved, "/", port=8081) == (200, f"pod={ns}/moved container=app image=registry.example/web:2.0-port8081\n")
    nohealth = core.read_namespaced_pod("nohealth", ns).status.pod_ip
    assert get(nohealth, "/")[0] == 200 and get(nohealth, "/healthz")[0] == 404


def test_exec_and_logs_through_the_api_server(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0", ports=http_port())]))
    out = exec_in(core, ns, "p", ["sh", "-c", "echo hello from exec; kill -0 1 && echo pid 1 is the app"])
    assert "hello from exec" in out and "pid 1 is the app" in out
    assert "started:" in logs(core, ns, "p")


def test_exec_reads_a_volume_at_its_mount_path_as_the_kubelet_projects_it(core, ns):
    """Exec maps a mount's container path to what the kubelet projected there (the runtime makes no mount
    namespace): a configMap volume's file, then its new content after the kubelet's next sync of the pod."""
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cfg"}, "data": {"mode": "blue"}})
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0", volumeMounts=[
        {"name": "cfg", "mountPath": "/etc/app"}])], volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}]))
    assert exec_in(core, ns, "p", ["cat", "/etc/app/mode"]) == "blue"
    core.patch_namespaced_config_map("cfg", ns, {"data": {"mode": "green"}})
    # The kubelet's sync period here is 10 s (tests/cluster/node.go), plus its watch of the ConfigMap.
    wait_for("the new content at the mount path", lambda: exec_in(core, ns, "p", ["cat", "/etc/app/mode"]) == "green",
             90, interval=2)
    assert "No such file" in exec_in(core, ns, "p", ["cat", "/etc/app/nope"])


def test_a_subpath_mount_keeps_what_the_container_started_with_until_it_restarts(core, ns):
    """A subPath of a configMap volume is the file as it was when the container started (a real kubelet binds it then;
    the test bed copies it, tests/cluster/subpath.go): after a change, the whole mount shows the new file at the
    kubelet's next sync and the subPath mount the old one, until the container starts again."""
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cfg"}, "data": {"mode": "blue"}})
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0", volumeMounts=[
        {"name": "cfg", "mountPath": "/etc/app"}, {"name": "cfg", "mountPath": "/etc/one/mode", "subPath": "mode"}])],
        volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}]))
    assert exec_in(core, ns, "p", ["cat", "/etc/one/mode"]) == "blue"
    core.patch_namespaced_config_map("cfg", ns, {"data": {"mode": "green"}})
    wait_for("the new content at the whole mount", lambda: exec_in(core, ns, "p", ["cat", "/etc/app/mode"]) == "green",
             90, interval=2)
    assert exec_in(core, ns, "p", ["cat", "/etc/one/mode"]) == "blue"
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "app", "image": "registry.example/web:2.0"}]}})
    wait_for("restart after the image change", lambda: restarts(core, ns, "p") == 1, 60)
    wait_for("the new content at the subPath mount", lambda: exec_in(core, ns, "p", ["cat", "/etc/one/mode"]) == "green",
             30, interval=1)


def test_sigterm_by_exec_restarts_and_ignoreterm_ignores_it(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0")]))
    exec_in(core, ns, "p", ["kill", "-TERM", "1"])
    wait_for("restart after kill -TERM 1", lambda: restarts(core, ns, "p") == 1, 30)
    assert "signal SIGTERM received" in logs(core, ns, "p", previous=True)

    create_ready_pod(core, ns, pod_manifest("q", [ctr("app", "registry.example/web:1.0-ignoreterm")]))
    exec_in(core, ns, "q", ["kill", "-TERM", "1"])
    wait_for("the ignored signal in the log",
             lambda: "ignored (image tag has -ignoreterm)" in logs(core, ns, "q"), 10)
    time.sleep(3)
    assert restarts(core, ns, "q") == 0


def test_prestop_hook_then_sigterm_drain_on_image_change(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr(
        "app", "registry.example/web:1.0-drain2", ports=http_port(),
        lifecycle={"preStop": {"httpGet": {"path": "/prestop", "port": 8080}}})],
        terminationGracePeriodSeconds=10))
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "app", "image": "registry.example/web:2.0"}]}})
    wait_for("restart after the image change", lambda: restarts(core, ns, "p") == 1, 60)
    prev = logs(core, ns, "p", previous=True)
    assert prev.index("GET /prestop") < prev.index("signal SIGTERM received: draining for 2s") < prev.index(
        "exiting with code 0")
    last = status_of(core.read_namespaced_pod("p", ns), "app").last_state.terminated
    assert last.exit_code == 0 and (last.finished_at - last.started_at).total_seconds() >= 2


def test_exec_prestop_hook_runs_in_the_container(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr(
        "app", "registry.example/web:1.0", ports=http_port(),
        lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "kill -HUP 1"]}}})]))
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "app", "image": "registry.example/web:2.0"}]}})
    wait_for("restart after the image change", lambda: restarts(core, ns, "p") == 1, 60)
    prev = logs(core, ns, "p", previous=True)
    assert prev.index("signal SIGHUP received") < prev.index("signal SIGTERM received")


def test_ignoreterm_is_killed_after_the_grace_period(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0-ignoreterm")],
                                            terminationGracePeriodSeconds=3))
    t0 = time.time()
    core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "app", "image": "registry.example/web:2.0"}]}})
    wait_for("restart after the image change", lambda: restarts(core, ns, "p") == 1, 60)
    assert time.time() - t0 >= 3
    last = status_of(core.read_namespaced_pod("p", ns), "app").last_state.terminated
    assert last.exit_code == 137 and last.reason == "Error"


def test_pull_tag_delays_the_start(core, ns):
    t0 = time.time()
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0-pull3")]))
    assert time.time() - t0 >= 3


def test_crash_is_a_process_exit(core, ns):
    core.create_namespaced_pod(ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0-crash")]))

    def exited():
        s = status_of(core.read_namespaced_pod("p", ns), "app")
        t = s and (s.last_state.terminated or s.state.terminated)
        return t if t else None
    t = wait_for("the crash", exited, 30)
    assert t.exit_code == 1 and "-crash" in t.message

    def crash_logged():
        # The kubelet may restart the container between the status read and the log read: the crashed run's
        # log is then the previous one. Look at both, the previous only once there is one.
        for previous in [False] + ([True] if restarts(core, ns, "p") > 0 else []):
            try:
                text = logs(core, ns, "p", previous=previous)
            except client.ApiException:
                continue   # waiting in back-off: no current log to read
            if "fault injection" in text:
                return text
        return None
    assert "exiting with code 1" in wait_for("the crash's log line", crash_logged, 30)


def test_node_addresses_are_test_bed_addresses(core):
    for n in core.list_node().items:
        ips = [a.address for a in n.status.addresses if a.type == "InternalIP"]
        assert ips and all(ipaddress.ip_address(i) in BENCH_NET for i in ips), (n.metadata.name, ips)


def test_unknown_container_exec_fails_clearly(core, ns):
    create_ready_pod(core, ns, pod_manifest("p", [ctr("app", "registry.example/web:1.0")]))
    try:
        out = exec_in(core, ns, "p", ["no-such-binary-here"])
    except client.ApiException as e:  # some client versions raise
        out = str(e)
    assert "no-such-binary-here" in out
