# inplace.k8s — developer entry points. `make demo` and `make test` are the two a user needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help
export GOTOOLCHAIN := local

CACHE      ?= $(CURDIR)/.cache
CLUSTERDIR ?= $(CURDIR)/.cluster
NODES      ?= 3
PODS       ?= 10
REPEAT     ?= 1
SOAK_FAULTS ?= 55
SOAK_SEED   ?=
SOAK_PODS   ?= 30
# K8S=1.NN: the Kubernetes release of the local cluster (default: tests/cluster/go.mod's, see
# tests/cluster/README.md "Versions"); cluster-up, cluster-test, integration and test honour it.
K8S        ?=
VERSIONS   ?=
TARGETS    ?=
PYTHON     ?= $(shell hack/find-python.sh)
VENV       := $(CACHE)/venv
export CACHE CLUSTERDIR NODES K8S

.PHONY: help venv cluster-build cluster-up cluster-down cluster-status cluster-test \
        sanity units integration test test-versions test-oldest demo bench soak clean \
        kruise-build kruise-up kruise-down bench-kruise galaxy-import release eda-test

help:
	@echo "make demo            build and start the local cluster, run an in-place rollout, print before/after"
	@echo "make test            sanity + unit + cluster + integration tests (what CI runs)"
	@echo "make cluster-up      start the local Kubernetes (kubeconfig: .cluster/kubeconfig); K8S=1.33 picks the release"
	@echo "make cluster-down    stop it; make cluster-status shows it"
	@echo "make test-versions VERSIONS='1.37 1.33' TARGETS='inplace_image'  cluster suite + integration targets on"
	@echo "                     each Kubernetes release (default: all of both); results: tests/cluster/versions/results.json"
	@echo "make test-oldest      the core targets on the oldest supported release (1.33)"
	@echo "make bench PODS=10,100 REPEAT=1  benchmarks on the local cluster"
	@echo "make kruise-up       opt-in: OpenKruise v1.8.2 (kruise-manager, a kruise-daemon per node) on the running local"
	@echo "                     cluster (hack/kruise.sh; make kruise-down removes it); not needed by make test"
	@echo "make bench-kruise PODS=100,300  the CloneSet beside the role and the native rolling update (Kruise up first)"
	@echo "make eda-test        Event-Driven Ansible end to end: the real ansible-rulebook (own venv, Java) restarts the users of an"
	@echo "                     edited ConfigMap in place on the local cluster (hack/eda-test.sh)"
	@echo "make galaxy-import   build the tarball and run galaxy-importer on it with Automation Hub's settings; fails on any warning"
	@echo "make release         fold the changelog fragments into the release of galaxy.yml's version (hack/release.sh)"
	@echo "make soak SOAK_FAULTS=55 SOAK_SEED= SOAK_PODS=30  chaos soak (a random seed unless SOAK_SEED is set) of the rollout role on the running local cluster"

venv: $(VENV)/.done
$(VENV)/.done: requirements.txt requirements-dev.txt requirements-test.txt hack/venv.sh
	hack/venv.sh "$(PYTHON)" "$(VENV)"

cluster-build:
	hack/cluster.sh build

cluster-up: cluster-build
	hack/cluster.sh up

cluster-down:
	hack/cluster.sh down

cluster-status:
	hack/cluster.sh status

cluster-test: cluster-up venv
	hack/cluster.sh test

sanity: venv
	hack/sanity.sh

units: venv
	hack/units.sh

integration: cluster-up venv
	hack/integration.sh

test: venv
	hack/test.sh

test-versions: venv
	VERSIONS="$(VERSIONS)" TARGETS="$(TARGETS)" hack/test-versions.sh; rc=$$?; \
	  $(VENV)/bin/python hack/compat-table.py; exit $$rc

# The core subset on the oldest supported release.
test-oldest: venv
	hack/test-oldest.sh

demo: venv
	hack/demo.sh

bench: venv
	REPEAT=$(REPEAT) hack/bench.sh "$(PODS)"

kruise-build:
	hack/kruise.sh build

kruise-up:
	hack/kruise.sh up

kruise-down:
	hack/kruise.sh down

# Its own summary and charts under bench/kruise/ (the committed run: bench/kruise/results.json, docs/performance.md).
bench-kruise: venv
	mkdir -p bench/kruise
	SCENARIOS=kruise REPEAT=$(REPEAT) OUT=$(CURDIR)/bench/kruise/results.json hack/bench.sh "$(PODS)"

# galaxy-importer in its own virtualenv ($(CACHE)/galaxy-importer, requirements-galaxy-importer.txt).
galaxy-import:
	hack/galaxy-import.sh

# ansible-rulebook in its own virtualenv ($(CACHE)/eda, requirements-eda.txt); starts the local cluster if needed.
eda-test:
	hack/eda-test.sh

release: venv
	hack/release.sh

soak: venv
	SOAK_FAULTS=$(SOAK_FAULTS) SOAK_SEED=$(SOAK_SEED) SOAK_PODS=$(SOAK_PODS) hack/soak.sh

clean: cluster-down
	rm -rf $(CACHE) $(CLUSTERDIR)
