# Every target builds .venv from scratch when it is missing or older than the requirements files.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8080
# Byte code cached for every Python process make starts, in the virtualenv rather than the work tree:
# with PYTHONDONTWRITEBYTECODE set (a shell or a CI image may set it) every pytest worker rewrote and
# compiled each test module again (collecting took 10.8 CPU-s instead of 3.3) and every server or CLI a
# test starts compiled hooks/ and podread/ again.
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX ?= $(abspath $(VENV))/pycache

.PHONY: venv test lint run bench bench-cluster soak demo image clean control-plane kueue jobset kwok helm test-cluster dev

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

lint: $(STAMP)
	$(PY) -m ruff check .

# The fast suite on every core (pytest-xdist): about 2 minutes on 2 cores instead of 3. --dist loadgroup
# hands out tests one by one (a module marked xdist_group runs whole on one worker, in order): the default
# chunks left the slow server and bench tests queued on one worker while the other idled 40-70 s at the end.
test: lint
	@start=$$(date +%s); $(PY) -m pytest -q -n auto --dist loadgroup; rc=$$?; echo "fast suite: $$(( $$(date +%s) - start )) s"; exit $$rc

# The cluster tier: kube-apiserver, kube-controller-manager, kube-scheduler and etcd built from Go modules (once,
# cached in ~/.cache/nvcre-hooks), then the tests marked `cluster` against them.
control-plane:
	@start=$$(date +%s); bash tests/cluster/controlplane/build.sh >/dev/null; \
	echo "control plane: ready in $$(( $$(date +%s) - start )) s (build or cache)"

# Kueue's manager built from the Go module sigs.k8s.io/kueue (once, cached the same way), for the
# cluster tier's queue tests (tests/cluster/kueue.py).
kueue:
	@start=$$(date +%s); bash tests/cluster/kueue/build.sh >/dev/null; \
	echo "kueue: ready in $$(( $$(date +%s) - start )) s (build or cache)"

# JobSet's manager (sigs.k8s.io/jobset) and kwok (sigs.k8s.io/kwok) built from their Go modules the
# same way: the real JobSet controller and kwok's nodes and pod lifecycles (tests/cluster/README.md).
jobset:
	@start=$$(date +%s); bash tests/cluster/jobset/build.sh >/dev/null; \
	echo "jobset: ready in $$(( $$(date +%s) - start )) s (build or cache)"

kwok:
	@start=$$(date +%s); bash tests/cluster/kwok/build.sh >/dev/null; \
	echo "kwok: ready in $$(( $$(date +%s) - start )) s (build or cache)"

# helm (helm.sh/helm/v4) built the same way, for the chart charts/nvcre-hooks: helm lint and helm
# template in the fast suite (which skips them without it, outside CI), helm install on the tier.
helm:
	@start=$$(date +%s); bash tests/cluster/helm/build.sh >/dev/null; \
	echo "helm: ready in $$(( $$(date +%s) - start )) s (build or cache)"

# Four pytest-xdist workers, each with its own control plane (a session fixture), test files kept
# whole (module fixtures): the tier waits far more than it computes (three workers kept 2 cores about
# half busy), so even on 2 cores a third and a fourth worker help (115 tests on a quiet 2-core
# machine: 413-437 s in two workers, 296 s in three; tests/cluster/README.md for four). The files go
# out longest first (tests/cluster/order.py; --no-loadscope-reorder keeps that order instead of
# xdist's most-tests-first, which left the long one-test files to the end).
test-cluster: $(STAMP) control-plane kueue jobset kwok helm
	@start=$$(date +%s); NVCRE_REQUIRE_CLUSTER=1 $(PY) -m pytest -q -m cluster -n 4 --dist loadfile --no-loadscope-reorder --durations=25 tests/cluster; rc=$$?; \
	echo "cluster tier: $$(( $$(date +%s) - start )) s"; exit $$rc

dev: $(STAMP) control-plane jobset kwok
	$(PY) -m tests.cluster.dev $(DEV_ARGS)

run: $(STAMP)
	$(VENV)/bin/gunicorn --config hooks/server/gunicorn.conf.py --bind $(HOST):$(PORT) 'hooks.wsgi:production_app()'

bench: $(STAMP)
	$(PY) -m bench

# The scale benchmark on the real control plane (bench/cluster_scale.py): 1,000 Jobs of 8 pods in four
# passes by default; BENCH_ARGS="--quick" runs 100, "--jobs N" any size. Writes bench/results.json and
# BENCHMARKS.md.
bench-cluster: $(STAMP) control-plane jobset kwok
	$(PY) -m bench.cluster_scale $(BENCH_ARGS)

soak: $(STAMP)
	$(PY) -m tests.soak

demo: $(STAMP)
	$(PY) -m hooks demo tests/payloads

image:  # the tag the manifests name (manifests/kustomization.yaml, manifests/deployment.yaml)
	docker build -t nvcre-hooks:0.1.0 .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
