"""Fixtures for the local cluster suite: a client for the running cluster, and a namespace per test."""
import json
import os
import subprocess
import time
import uuid

import pytest
from kubernetes import client, config

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CLUSTERDIR = os.environ.get("CLUSTERDIR", os.path.join(ROOT, ".cluster"))
KUBECONFIG = os.path.join(CLUSTERDIR, "kubeconfig")
# hack/cluster.sh test names the binary of the release under test and the version it was built from.
CLUSTER_BIN = os.environ.get("INPLACE_CLUSTER_BIN") or os.path.join(
    os.environ.get("CACHE", os.path.join(ROOT, ".cache")), "bin", "cluster")


def _default_version():
    with open(os.path.join(ROOT, "tests", "cluster", "go.mod"), encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words[:1] == ["k8s.io/kubernetes"] and words[1].startswith("v"):
                return words[1]
    raise RuntimeError("tests/cluster/go.mod requires no k8s.io/kubernetes version")


VERSION = os.environ.get("INPLACE_K8S_VERSION") or _default_version()
MINOR = int(VERSION.split(".")[1])


@pytest.fixture(scope="session")
def api_client():
    if not os.path.exists(KUBECONFIG):
        pytest.fail(f"no kubeconfig at {KUBECONFIG}: the local cluster is not up (make cluster-up)")
    c = config.new_client_from_config(config_file=KUBECONFIG)
    try:
        client.VersionApi(c).get_code()
    except Exception as exc:  # the suite must fail, not skip, without a cluster
        pytest.fail(f"the local cluster at {KUBECONFIG} does not answer: {exc}")
    return c


@pytest.fixture(scope="session")
def core(api_client):
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def apps(api_client):
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="session")
def discovery(api_client):
    return client.DiscoveryV1Api(api_client)


@pytest.fixture(scope="session")
def state():
    with open(os.path.join(CLUSTERDIR, "state.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture
def ns(core):
    name = "t-" + uuid.uuid4().hex[:8]
    core.create_namespace({"metadata": {"name": name}})
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            core.read_namespaced_service_account("default", name)
            break
        except client.ApiException:
            time.sleep(0.2)
    yield name
    core.delete_namespace(name)


def wait_for(what, fn, timeout=60, interval=0.25):
    """Calls fn until it returns a truthy value; fails the test naming `what` on timeout."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


def cri(socket, *args):
    out = subprocess.run([CLUSTER_BIN, "cri", "--socket", socket, *args], check=True, capture_output=True, text=True)
    return out.stdout
