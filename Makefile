# Keelson's Makefile. `make help` lists every target. Tools are pinned in tools/versions.env and installed into bin/
# on first use by tools/install.sh (downloaded where possible, built from the Go module proxy otherwise).

include tools/versions.env

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# The three controller binaries. Each is named for its kind, <kind>-controller or workload-<kind>, and the kind names
# its controller (controllers/<kind>) and its webhooks (webhooks/<kind>); its API group is under apis/.
BINARIES := daemonset-controller workload-sizer pipeline-controller
kind_of = $(subst workload-,,$(subst -controller,,$(1)))

BIN := $(CURDIR)/bin

# The Go modules: the product (.), its API (apis/, which clients import alone), the chart's tests (charts/: Helm's SDK)
# and the development tools (tools/: the local cluster, benchmarks, reliability suite, image builder, release, CRD
# docs and e2e reports), whose dependencies stay out of the product's go.mod. fmt, tidy, vet, lint and test run in
# each.
MODULES := . apis charts tools
# $(call build_tool,NAME) builds the development tool tools/NAME into bin/tools/NAME; $(call tool,NAME) builds it and
# names it, to run from the repository's root, where the paths it is given point.
build_tool = go -C tools build -o $(BIN)/tools/$(1) ./$(1)
tool = $(call build_tool,$(1)) && $(BIN)/tools/$(1)
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
KUBE_API_LINTER := $(BIN)/kube-api-linter-$(KUBE_API_LINTER_VERSION)
HELM := $(BIN)/helm-$(HELM_VERSION)
HELM_DOCS := $(BIN)/helm-docs-$(HELM_DOCS_VERSION)
PROMTOOL := $(BIN)/promtool-$(PROMETHEUS_VERSION)
ENVTEST_DIR := $(BIN)/k8s/$(KUBE_VERSION)
KUBECTL := $(ENVTEST_DIR)/kubectl

CHART_FILES := charts/keelson/files
CRD_DIR := $(CHART_FILES)/crds

# The one version: the chart's appVersion (charts/keelson/Chart.yaml). The images are tagged with it, which is the
# tag the chart pulls by default, and the binaries report it; GIT_COMMIT tells builds of the same version apart.
# tools/release/version_test.go fails if the two drift. Release a new version by changing appVersion.
VERSION := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/keelson/Chart.yaml)
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit's date, not the clock's: the same source builds the same binaries, and so the same image digests.
BUILD_DATE ?= $(shell git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
VERSION_PKG := github.com/keelson-dev/keelson/cmd/internal/version
LDFLAGS := -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).GitCommit=$(GIT_COMMIT) \
	-X $(VERSION_PKG).BuildDate=$(BUILD_DATE)

# Extra arguments for `go test`, e.g. make test GO_TEST_FLAGS='-run TestLeader -v'.
GO_TEST_FLAGS ?=
# Extra flags for make run-<binary>, e.g. RUN_ARGS='--log-level=debug'.
RUN_ARGS ?=

##@ General

.PHONY: help
help: ## Show this help: every target, by section.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9%. -]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the API types' deepcopy functions (zz_generated.deepcopy.go).
	cd apis && $(CONTROLLER_GEN) object paths=./...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, per-controller RBAC ClusterRoles and webhook configurations into charts/keelson/files/.
	mkdir -p $(CRD_DIR) $(CHART_FILES)/rbac $(CHART_FILES)/webhooks
	rm -f $(CRD_DIR)/*.yaml $(CHART_FILES)/rbac/*.yaml $(CHART_FILES)/webhooks/*.yaml
	cd apis && $(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./... output:crd:dir=../$(CRD_DIR)
	$(call build_tool,crddocs)
	find $(CRD_DIR) -name "*.yaml" | sort | xargs -r $(BIN)/tools/crddocs
	$(foreach b,$(BINARIES),$(call manifests-for,$(b)))

# manifests-for generates one binary's ClusterRole (shared runtime markers plus its controller's) and, once it has
# webhooks, its webhook configurations.
define manifests-for
	$(CONTROLLER_GEN) rbac:roleName=keelson-$(1),fileName=$(1).yaml \
		paths="./cmd/internal/manager/...$(if $(wildcard controllers/$(call kind_of,$(1))),;./controllers/$(call kind_of,$(1))/...)" \
		output:rbac:dir=$(CHART_FILES)/rbac
	$(if $(wildcard webhooks/$(call kind_of,$(1))),$(CONTROLLER_GEN) webhook paths=./webhooks/$(call kind_of,$(1))/... output:stdout > $(CHART_FILES)/webhooks/$(1).yaml)

endef

.PHONY: fmt
fmt: ## Format the Go code of every module.
	$(foreach m,$(MODULES),go -C $(m) fmt ./... &&) true

.PHONY: tidy
tidy: ## Tidy go.mod and go.sum of every module.
	$(foreach m,$(MODULES),go -C $(m) mod tidy &&) true

.PHONY: vet
vet: ## Run go vet on every module, the tests that start processes included (build tag integration).
	$(foreach m,$(MODULES),go -C $(m) vet -tags integration ./... &&) true

.PHONY: lint
lint: $(GOLANGCI_LINT) $(KUBE_API_LINTER) ## Run golangci-lint (pinned) on every module, the Kubernetes API linter on apis/, and shellcheck on every shell script.
	$(foreach m,$(MODULES),(cd $(m) && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) &&) true
	cd apis && $(KUBE_API_LINTER) run --config ../.golangci-kal.yml ./...
	sc=$$(tools/install.sh shellcheck) && git ls-files -z -- '*.sh' | xargs -0 "$$sc" --external-sources --source-path=SCRIPTDIR .ci/run

.PHONY: layers
layers: ## Check that the files of each Go package stand in layers: no two files use each other (tools/layers).
	$(foreach m,$(MODULES),go -C tools run ./layers -dir ../$(m) ./... &&) true

.PHONY: verify
verify: ## Regenerate everything and fail on drift; then vet, lint and the layers check. What CI runs first.
	tools/verify-generated.sh $(MAKE) generate manifests chart-docs fmt tidy
	$(MAKE) vet lint layers

##@ Test

# go_test KIND FLAGS: go test, with FLAGS, the packages of KIND (unit or process, tools/test-packages.sh) of every module.
go_test = $(foreach m,$(MODULES),pkgs=$$(tools/test-packages.sh $(1) $(m)) && \
	if [ -n "$$pkgs" ]; then go -C $(m) test $(2) $(GO_TEST_FLAGS) $$pkgs; fi &&) true

.PHONY: test
test: test-unit test-integration ## Run every test of every module: unit, then integration.

.PHONY: test-unit
test-unit: ## Run every pure test (none starts an apiserver, a binary or an image build): seconds, cached when unchanged.
	$(call go_test,unit)

.PHONY: test-integration
test-integration: envtest $(HELM) $(PROMTOOL) ## Run the tests that start processes (build tag integration): a real kube-apiserver + etcd (envtest), chart (promtool too), binaries and image builds.
	tools/install.sh tini >/dev/null
	tools/install.sh tini-arm64 >/dev/null
	tools/install.sh monitoring-crds >/dev/null
	@# Tests that start processes (apiserver and etcd, binaries, image builds) always run: a cached pass of those
	@# would replay a result the processes never produced again.
	export KUBEBUILDER_ASSETS=$(ENVTEST_DIR) && $(call go_test,process,-count=1 -tags integration)

.PHONY: rules-test
rules-test: envtest $(HELM) $(PROMTOOL) ## Check and unit-test the chart's alerting rules with promtool, its dashboard's queries and its monitoring objects.
	tools/install.sh monitoring-crds >/dev/null
	KUBEBUILDER_ASSETS=$(ENVTEST_DIR) go -C charts test -count=1 -tags integration $(GO_TEST_FLAGS) \
		-run 'TestAlertingRules|TestDashboard|TestMonitoring|TestServiceMonitor|TestMetricNames' .

# Fuzzing: go test -fuzz takes one target of one package at a time, so make fuzz runs each Fuzz function in turn,
# for FUZZTIME each. The committed seed corpora (testdata/fuzz/<target>/ beside each) run in make test as ordinary
# tests; a failing input the fuzzer finds is written there too, to be committed with the fix. FUZZTIME is a count of
# executions by default: a duration races Go 1.26's fuzzing coordinator at its deadline (golang/go#75804, fixed in
# Go 1.27), which on a loaded machine fails a target with "context deadline exceeded" and no failing input.
FUZZTIME ?= 20000x
# Extra flags for go test -fuzz, e.g. FUZZ_FLAGS=-parallel=1 (workers; GOMAXPROCS by default).
FUZZ_FLAGS ?=

.PHONY: fuzz
fuzz: ## Run every fuzz target (webhooks, planners) for FUZZTIME (20000 executions) each; fails on the first crash or broken property, or when it finds no target.
	@n=0; for dir in $$(grep -rl --include='*_test.go' --exclude-dir=bin --exclude-dir=.cluster '^func Fuzz' . | xargs -rn1 dirname | sort -u); do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go); do \
			echo "==> $$dir $$target"; n=$$((n + 1)); \
			mod=$$(dirname "$$(go -C $$dir env GOMOD)"); \
			go -C $$mod test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $(FUZZ_FLAGS) ./$$(realpath --relative-to=$$mod $$dir) || exit 1; \
		done; \
	done; \
	[ $$n -gt 0 ] || { echo "make fuzz: no fuzz target found (func Fuzz... in a _test.go file)"; exit 1; }; \
	echo "make fuzz: $$n targets"

.PHONY: envtest
envtest: $(ENVTEST_DIR)/.envtest-ready ## Install the pinned kube-apiserver, etcd and kubectl into bin/ (downloaded or built).

##@ End-to-end

CHAINSAW := $(BIN)/chainsaw-$(CHAINSAW_VERSION)
# Suites: e2e/<suite>/. The controller suites run against the installed chart; chart and upgrade reinstall it.
E2E_SUITES ?= daemonset sizer pipeline lifecycle chart upgrade
CHAINSAW_FLAGS ?=
# The previous revision the upgrade suite starts from: the latest tag, else the revision e2e/upgrade/previous-revision
# names (one with every kind's features the suite carries across, model fetches included; move it forward when a
# revision is tagged).
PREVIOUS ?= $(shell git describe --tags --abbrev=0 2>/dev/null || cat e2e/upgrade/previous-revision)
PREVIOUS_DIR := $(BIN)/previous
PREVIOUS_TAG := e2e-previous

$(CHAINSAW):
	tools/install.sh chainsaw >/dev/null

.PHONY: e2e-previous
e2e-previous: ## Build the chart and images of PREVIOUS (a git revision) for the upgrade suite, into bin/previous/.
	rm -rf $(PREVIOUS_DIR) && mkdir -p $(PREVIOUS_DIR)
	git archive $(PREVIOUS) | tar -x -C $(PREVIOUS_DIR)
	$(MAKE) -C $(PREVIOUS_DIR) image-local IMAGE_TAG=$(PREVIOUS_TAG) VERSION=$(PREVIOUS_TAG) GIT_COMMIT=$$(git rev-parse $(PREVIOUS)) >/dev/null
	echo $$(git rev-parse --short $(PREVIOUS)) > $(PREVIOUS_DIR)/.revision

# The environment every suite's scripts read: tools on PATH, the chart and image tags to install.
E2E_ENV = KUBECONFIG=$(KUBECONFIG) PATH=$(ENVTEST_DIR):$(BIN):$$PATH KEELSON_CHART=$(CURDIR)/charts/keelson KEELSON_RELEASE=$(RELEASE) \
	KEELSON_NAMESPACE=$(RELEASE_NAMESPACE) KEELSON_VALUES="$(LOCAL_IMAGE_VALUES)" \
	KEELSON_PREVIOUS_CHART=$(PREVIOUS_DIR)/charts/keelson KEELSON_PREVIOUS_VALUES="--set global.image.registry=$(IMAGE_REGISTRY) \
	--set global.image.repository=$(IMAGE_REPOSITORY) --set global.image.tag=$(PREVIOUS_TAG) --set global.image.pullPolicy=IfNotPresent" \
	KEELSON_E2E_DIR=$(CURDIR)/e2e KEELSON_E2E_DIAGNOSES=$(E2E_REPORTS)/diagnoses

# Chainsaw's JSON reports and e2e/diagnose.sh's descriptions of failed tests' namespaces, for e2e_chainsaw.
E2E_REPORTS := $(BIN)/e2e-reports
# e2e_chainsaw NAME DIRS: run the suites in DIRS; when one fails, end the log with what failed (tools/e2ereport:
# the failed operations and their namespaces' diagnoses), then fail.
e2e_chainsaw = $(E2E_ENV) $(CHAINSAW) test --config e2e/.chainsaw.yaml $(2) --report-format JSON \
	--report-path $(E2E_REPORTS) --report-name $(1) $(CHAINSAW_FLAGS) || \
	{ $(call tool,e2ereport) --reports $(E2E_REPORTS) --diagnoses $(E2E_REPORTS)/diagnoses; exit 1; }

.PHONY: e2e-local
e2e-local: $(CHAINSAW) ## Run every chainsaw suite on the local cluster: up, images, chart, suites. Leaves it up (make cluster-down).
	$(MAKE) cluster-up
	$(MAKE) images-local
	$(if $(filter upgrade,$(E2E_SUITES)),$(MAKE) e2e-previous && $(CLUSTER_TOOL) load $(CLUSTER_FLAGS) $(PREVIOUS_DIR)/bin/images/*.tar)
	$(MAKE) e2e-run KUBECONFIG=$(LOCAL_KUBECONFIG)

# The kind path, for users with Docker and internet: a kind cluster from e2e/kind-config.yaml, the images built
# with Docker and loaded into it, kwok installed in it (the suites create simulated nodes), then the same suites.
KIND := $(BIN)/kind-$(KIND_VERSION)
KIND_CLUSTER ?= keelson-e2e
KIND_NODE_IMAGE ?= kindest/node:$(KUBE_VERSION)
KIND_KUBECONFIG := $(BIN)/kind-$(KIND_CLUSTER).kubeconfig
KWOK_RELEASE_URL := https://github.com/kubernetes-sigs/kwok/releases/download/$(KWOK_VERSION)

$(KIND):
	tools/install.sh kind >/dev/null

.PHONY: e2e
e2e: $(KIND) $(CHAINSAW) $(HELM) envtest ## Run every chainsaw suite on kind (needs Docker and internet): cluster, images, kwok, suites.
	$(KIND) get clusters | grep -qx $(KIND_CLUSTER) || \
		$(KIND) create cluster --name $(KIND_CLUSTER) --image $(KIND_NODE_IMAGE) --config e2e/kind-config.yaml --wait 2m
	$(KIND) get kubeconfig --name $(KIND_CLUSTER) > $(KIND_KUBECONFIG)
	$(MAKE) docker-build IMAGE_TAG=$(LOCAL_IMAGE_TAG)
	docker build --target e2e-echo -t $(ECHO_IMAGE) .
	docker build --target e2e-echo-next -t $(ECHO_NEXT_IMAGE) .
	$(MAKE) e2e-previous-docker
	$(foreach i,$(addprefix $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY)/,$(addsuffix :$(LOCAL_IMAGE_TAG),$(BINARIES))) \
		$(addprefix $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY)/,$(addsuffix :$(PREVIOUS_TAG),$(BINARIES))) $(ECHO_IMAGE) $(ECHO_NEXT_IMAGE), \
		$(KIND) load docker-image --name $(KIND_CLUSTER) $(i) &&) true
	$(KUBECTL) --kubeconfig $(KIND_KUBECONFIG) apply -f $(KWOK_RELEASE_URL)/kwok.yaml -f $(KWOK_RELEASE_URL)/stage-fast.yaml
	$(MAKE) e2e-run KUBECONFIG=$(KIND_KUBECONFIG) \
		LOCAL_IMAGES_DIGEST="\$$(docker image inspect -f '{{.Id}}' $(addprefix $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY)/,$(addsuffix :$(LOCAL_IMAGE_TAG),$(BINARIES))) | sha256sum | cut -c1-16)"

# e2e-previous-docker builds the previous revision's images with Docker, for kind.
.PHONY: e2e-previous-docker
e2e-previous-docker:
	rm -rf $(PREVIOUS_DIR) && mkdir -p $(PREVIOUS_DIR)
	git archive $(PREVIOUS) | tar -x -C $(PREVIOUS_DIR)
	$(MAKE) -C $(PREVIOUS_DIR) docker-build IMAGE_TAG=$(PREVIOUS_TAG) VERSION=$(PREVIOUS_TAG)

.PHONY: e2e-down
e2e-down: $(KIND) ## Delete the kind cluster of make e2e.
	$(KIND) delete cluster --name $(KIND_CLUSTER)

# e2e-run runs the suites against $(KUBECONFIG): the upgrade suite first (it starts from the previous release),
# then the controller suites against HEAD's chart, then the chart suite, which toggles and uninstalls.
.PHONY: e2e-run
e2e-run: $(CHAINSAW) $(HELM)
	rm -rf $(E2E_REPORTS) && mkdir -p $(E2E_REPORTS)
	$(if $(filter upgrade,$(E2E_SUITES)),$(call e2e_chainsaw,upgrade,e2e/upgrade))
	$(E2E_ENV) $(HELM) --kubeconfig $(KUBECONFIG) upgrade --install $(RELEASE) charts/keelson -n $(RELEASE_NAMESPACE) \
		--create-namespace $(LOCAL_IMAGE_VALUES) --wait --timeout 5m
	$(if $(filter daemonset sizer pipeline lifecycle,$(E2E_SUITES)),$(call e2e_chainsaw,controllers,\
		$(addprefix e2e/,$(filter daemonset sizer pipeline lifecycle,$(E2E_SUITES)))))
	$(if $(filter chart,$(E2E_SUITES)),$(call e2e_chainsaw,chart,e2e/chart))

.PHONY: bench bench-quick
bench-quick: ## Benchmarks at small sizes (a few minutes) on the local cluster: prints the tables, fails on a missing measurement. Needs make cluster-up.
	$(MAKE) images-local deploy-local
	$(call tool,bench) --quick --cluster-tool $(CLUSTER_TOOL) --cluster-dir $(CLUSTER_DIR) --kubeconfig $(LOCAL_KUBECONFIG) \
		--audit-log $(CLUSTER_DIR)/logs/audit.log --release $(RELEASE) --release-namespace $(RELEASE_NAMESPACE)

bench: ## The full benchmarks (scale points up to N = 10,000; the rest at N = 1000) against the built-in controllers; rewrites docs/benchmarks.md, plots, JSON.
	$(MAKE) images-local deploy-local
	$(call tool,bench) --cluster-tool $(CLUSTER_TOOL) --cluster-dir $(CLUSTER_DIR) --kubeconfig $(LOCAL_KUBECONFIG) \
		--audit-log $(CLUSTER_DIR)/logs/audit.log --release $(RELEASE) --release-namespace $(RELEASE_NAMESPACE) --out docs

.PHONY: bench-model-cache
bench-model-cache: $(CLUSTER_TOOL) ## The pipeline model-cache benchmark (a few minutes): a 200 MiB model fetched cold into the real node's cache, then from it; rewrites its section of docs/benchmarks.md.
	$(MAKE) cluster-images images-local deploy-local
	$(CLUSTER_TOOL) load $(CLUSTER_FLAGS) $(BIN)/images/keelson-echo.tar
	$(call tool,bench) --model-cache 3 --kubeconfig $(LOCAL_KUBECONFIG) --out docs

# The reliability suite's faults (tools/chaos, docs/reliability.md): the controllers' leaders die mid-work while an
# invariant is sampled twice a second; their replicas die one at a time while a client's admission calls are
# counted; their webhooks are cut off; etcd and the apiserver restart. Both need make cluster-up (root); both
# install the chart with local images.
CHAOS_FLAGS = --cluster-tool $(CLUSTER_TOOL) --cluster-dir $(CLUSTER_DIR) --kubeconfig $(LOCAL_KUBECONFIG) \
	--audit-log $(CLUSTER_DIR)/logs/audit.log \
	--release $(RELEASE) --release-namespace $(RELEASE_NAMESPACE)

.PHONY: chaos chaos-quick
chaos-quick: $(CLUSTER_TOOL) ## The reliability suite's short form (CI): leader and replica deaths, webhooks cut off, etcd and apiserver restarts; fails on a broken invariant, a refused admission call or a failed check.
	$(MAKE) images-local deploy-local
	$(call tool,chaos) --quick $(CHAOS_FLAGS)

chaos: $(CLUSTER_TOOL) ## The full reliability suite (about 100 minutes): every scenario at full size, nodes flapping and a 30-minute soak included; rewrites docs/reliability.md's figures and docs/reliability/*.json.
	$(MAKE) images-local deploy-local
	$(call tool,chaos) --out docs $(CHAOS_FLAGS)

##@ Build

.PHONY: build
build: ## Build the three controller binaries into bin/ with version information stamped in.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

.PHONY: run-daemonset-controller run-workload-sizer run-pipeline-controller
run-daemonset-controller run-workload-sizer run-pipeline-controller: run-%: ## Run a controller (run-daemonset-controller, run-workload-sizer, run-pipeline-controller) against the current kubeconfig.
	go run -ldflags "$(LDFLAGS)" ./cmd/$* --log-format=console --leader-elect=false --enable-webhooks=false \
		--metrics-bind-address=0 $(RUN_ARGS)

.PHONY: chart-lint
chart-lint: $(HELM) ## Lint charts/keelson strictly with the pinned helm.
	$(HELM) lint --strict charts/keelson

.PHONY: chart-docs
chart-docs: $(HELM_DOCS) ## Write charts/keelson/README.md (every value, its default and its comment) from values.yaml.
	$(HELM_DOCS) --chart-search-root charts --template-files README.md.gotmpl --log-level warning

.PHONY: chart-template
chart-template: $(HELM) ## Render charts/keelson with its defaults (VALUES='--set workloadSizer.enabled=false' to vary).
	$(HELM) template keelson charts/keelson --namespace keelson-system $(VALUES)

# Image names: $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY)/<binary>:$(IMAGE_TAG), as the chart's values compose them.
IMAGE_REGISTRY ?= docker.io
IMAGE_REPOSITORY ?= keelson
IMAGE_TAG ?= $(VERSION)

.PHONY: docker-build
docker-build: ## Build the three images with Docker (needs a Docker engine and a registry for the base images).
	$(foreach b,$(BINARIES),docker build --target $(b) --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) \
		--build-arg BUILD_DATE=$(BUILD_DATE) -t $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY)/$(b):$(IMAGE_TAG) . &&) true

.PHONY: image-local
image-local: build ## Build the same three images offline, as OCI archives in bin/images/ (no Docker, no registry).
	$(call build_tool,image)
	TINI=$$(tools/install.sh tini) && $(foreach b,$(BINARIES),$(BIN)/tools/image --binary $(BIN)/$(b) --tini $$TINI \
		--ref $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY)/$(b):$(IMAGE_TAG) --out $(BIN)/images/$(b).tar &&) true

# make release: the multi-architecture images and the chart, pushed to REGISTRY (host[/path], e.g. ghcr.io/acme),
# signed with SIGNING_KEY (a cosign or PEM private key; a cosign key's password in COSIGN_PASSWORD), each with its
# SBOM and provenance attested. UNSIGNED=1 pushes without (a registry on this machine).
REGISTRY ?=
SIGNING_KEY ?=
UNSIGNED ?=
RELEASE_PLATFORMS_ARCH := amd64 arm64
RELEASE_FLAGS ?=

.PHONY: release
release: ## Build linux/amd64+arm64 images, push one index per controller and the chart (OCI) to REGISTRY=host[/path], signed with SIGNING_KEY.
	@test -n "$(REGISTRY)" || { echo "usage: make release REGISTRY=<host>[/<path>] SIGNING_KEY=<key> (log in first: docker login or helm registry login)" >&2; exit 2; }
	@test -n "$(SIGNING_KEY)$(UNSIGNED)" || { echo "make release needs SIGNING_KEY=<cosign or PEM private key> (or UNSIGNED=1 for a registry of your own)" >&2; exit 2; }
	@[ -n "$(UNSIGNED)" ] || [ "$$(git tag --points-at HEAD | grep -x 'v$(VERSION)')" = "v$(VERSION)" ] || { echo "make release needs HEAD tagged v$(VERSION) (the runbook links of the release's alerts point at it): git tag v$(VERSION)" >&2; exit 2; }
	$(call tool,release) --registry $(REGISTRY) --repository $(IMAGE_REPOSITORY) --git-commit $(GIT_COMMIT) \
		--build-date $(BUILD_DATE) $(foreach a,$(RELEASE_PLATFORMS_ARCH),--tini-$(a) $$(tools/install.sh tini-$(a))) \
		$(if $(SIGNING_KEY),--signing-key $(SIGNING_KEY)) $(if $(UNSIGNED),--unsigned) $(RELEASE_FLAGS)

##@ Deploy

.PHONY: install
install: envtest ## Install the CRDs into the cluster of the current kubeconfig (server-side apply).
	@ls $(CRD_DIR)/*.yaml >/dev/null 2>&1 || { echo "no CRDs generated yet" >&2; exit 1; }
	$(KUBECTL) apply --server-side --field-manager=keelson-make -f $(CRD_DIR)

.PHONY: uninstall
uninstall: envtest ## Delete the CRDs, and with them every Keelson object, from the current cluster.
	@ls $(CRD_DIR)/*.yaml >/dev/null 2>&1 || { echo "no CRDs generated yet" >&2; exit 1; }
	$(KUBECTL) delete --ignore-not-found -f $(CRD_DIR)

##@ Local cluster

# The local cluster: one real node on this host plus FAKE_NODES simulated (kwok) nodes; see docs/local-cluster.md.
CLUSTER_DIR ?= $(CURDIR)/.cluster
# Simulated nodes cluster-up keeps (empty: leave the pool as it is; make dev uses 3).
FAKE_NODES ?=
LOCAL_KUBECONFIG := $(CLUSTER_DIR)/kubeconfig
CLUSTER_TOOL := $(BIN)/keelson-cluster
CLUSTER_FLAGS := --dir $(CLUSTER_DIR) --bin-dir $(ENVTEST_DIR) --kwok $(BIN)/kwok-$(KWOK_VERSION) \
	--kwok-stages $(BIN)/kwok-stages-$(KWOK_VERSION).yaml \
	--images-dir $(BIN)/images
KUBECTL_LOCAL := $(KUBECTL) --kubeconfig $(LOCAL_KUBECONFIG)
HELM_LOCAL := $(HELM) --kubeconfig $(LOCAL_KUBECONFIG)
# The end-to-end workload image (e2e/echo), the same name on kind and on the local cluster.
ECHO_IMAGE := localhost/keelson-echo:e2e
# The same server as a second image (another user makes another image config, so another image ID): an image
# change a running pod can take in place, without a registry.
ECHO_NEXT_IMAGE := localhost/keelson-echo:e2e-next
RELEASE ?= keelson
RELEASE_NAMESPACE ?= keelson-system
# Locally built images carry a fixed tag (imported into the node, never pulled); the pods carry the images' digest,
# so a rebuilt image rolls them and an unchanged one does not.
LOCAL_IMAGE_TAG := local
LOCAL_IMAGES_DIGEST = $$(cat $(addprefix $(BIN)/images/,$(addsuffix .tar,$(BINARIES))) | sha256sum | cut -c1-16)
LOCAL_IMAGE_VALUES = --set global.image.registry=$(IMAGE_REGISTRY) --set global.image.repository=$(IMAGE_REPOSITORY) \
	--set global.image.tag=$(LOCAL_IMAGE_TAG) --set global.image.pullPolicy=IfNotPresent \
	--set-string global.podAnnotations.keelson\\.dev/images-digest=$(LOCAL_IMAGES_DIGEST)

.PHONY: $(CLUSTER_TOOL)
$(CLUSTER_TOOL):
	CGO_ENABLED=0 go -C tools build -o $@ ./cluster

.PHONY: cluster-tools
cluster-tools: envtest $(HELM) $(CLUSTER_TOOL) ## Install everything the local cluster runs: node binaries, kwok, CoreDNS, pause (pinned, cached in bin/).
	tools/install.sh kube >/dev/null
	tools/install.sh kwok >/dev/null

.PHONY: cluster-images
cluster-images: ## Build the node's own images offline: pause, CoreDNS and the e2e echo server (bin/images/).
	$(call build_tool,image)
	PAUSE=$$(tools/install.sh pause) && COREDNS=$$(tools/install.sh coredns) && mkdir -p $(BIN)/images && \
	$(BIN)/tools/image --tini= --user=65535:65535 --binary $(BIN)/pause --ref registry.k8s.io/pause:$(PAUSE_VERSION) \
		--out $(BIN)/images/pause.tar >/dev/null && \
	$(BIN)/tools/image --tini= --user=0:0 --binary $(BIN)/coredns --ref localhost/keelson/coredns:local \
		--out $(BIN)/images/coredns.tar >/dev/null
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $(BIN)/echo ./e2e/echo
	$(BIN)/tools/image --tini= --binary $(BIN)/echo --ref $(ECHO_IMAGE) --out $(BIN)/images/keelson-echo.tar >/dev/null
	$(BIN)/tools/image --tini= --user=65533:65533 --binary $(BIN)/echo --ref $(ECHO_NEXT_IMAGE) \
		--out $(BIN)/images/keelson-echo-next.tar >/dev/null

.PHONY: cluster-up
cluster-up: cluster-tools cluster-images ## Start the local cluster (idempotent; FAKE_NODES=N adds simulated nodes). Needs root.
	$(CLUSTER_TOOL) up $(CLUSTER_FLAGS) $(if $(FAKE_NODES),--fake-nodes $(FAKE_NODES))

.PHONY: cluster-down
cluster-down: $(CLUSTER_TOOL) ## Stop the local cluster and remove every trace of it from the host (keeps .cluster/pki and logs).
	$(CLUSTER_TOOL) down $(CLUSTER_FLAGS)

.PHONY: cluster-status
cluster-status: $(CLUSTER_TOOL) ## Show the local cluster's processes and nodes; fails unless it is up.
	$(CLUSTER_TOOL) status $(CLUSTER_FLAGS)

.PHONY: cluster-check-clean
cluster-check-clean: $(CLUSTER_TOOL) ## Fail if any process, mount, bridge, iptables chain or cgroup of the local cluster is left.
	$(CLUSTER_TOOL) check-clean $(CLUSTER_FLAGS)

.PHONY: cluster-crash-test
cluster-crash-test: $(CLUSTER_TOOL) ## Kill every process of the running local cluster with SIGKILL, then check that cluster-up recovers.
	$(CLUSTER_TOOL) kill $(CLUSTER_FLAGS)
	$(MAKE) cluster-up
	$(CLUSTER_TOOL) status $(CLUSTER_FLAGS)

.PHONY: images-local
images-local: $(CLUSTER_TOOL) ## Build the controller images offline and import them into the running local cluster.
	$(MAKE) image-local IMAGE_TAG=$(LOCAL_IMAGE_TAG)
	$(CLUSTER_TOOL) load $(CLUSTER_FLAGS) $(addprefix $(BIN)/images/,$(addsuffix .tar,$(BINARIES)))

# The samples make dev applies: one of each kind, runnable on the local cluster (docs/samples/dev/).
DEV_SAMPLES := docs/samples/dev
# MONITORING=1 (make dev, make deploy-local) installs the Prometheus Operator's ServiceMonitor and PrometheusRule
# CRDs (the pinned release's, offline) and turns the chart's monitoring on: ServiceMonitors, alerts and dashboard.
MONITORING ?=
MONITORING_VALUES := --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true \
	--set metrics.dashboard.enabled=true

.PHONY: dev
dev: ## Bring everything up: local cluster, images, the chart, one Ready sample of each kind. Run it again any time.
	$(MAKE) cluster-up FAKE_NODES=$(or $(FAKE_NODES),3)
	$(MAKE) images-local
	$(MAKE) deploy-local
	$(KUBECTL_LOCAL) apply --server-side --field-manager=keelson-dev -f $(DEV_SAMPLES)
	$(KUBECTL_LOCAL) wait --for=condition=Ready --timeout=180s -f $(DEV_SAMPLES)
	@$(KUBECTL_LOCAL) get kds,wls,ipl -A
	@echo; echo "The cluster is up. Point kubectl at it:"; echo "  export KUBECONFIG=$(LOCAL_KUBECONFIG)"

.PHONY: deploy-local
deploy-local: $(HELM) ## helm upgrade --install the chart into the local cluster with the local images, and wait until Ready (MONITORING=1: with its monitoring).
	$(if $(MONITORING),$(KUBECTL_LOCAL) apply --server-side --field-manager=keelson-make -f $$(tools/install.sh monitoring-crds))
	$(HELM_LOCAL) upgrade --install $(RELEASE) charts/keelson --namespace $(RELEASE_NAMESPACE) --create-namespace \
		$(LOCAL_IMAGE_VALUES) $(if $(MONITORING),$(MONITORING_VALUES)) $(VALUES) --wait --timeout 5m
	$(KUBECTL_LOCAL) -n $(RELEASE_NAMESPACE) rollout status deployment --timeout=180s

.PHONY: dev-down
dev-down: cluster-down ## Remove everything make dev made (the cluster with all it ran).

##@ Tools

.PHONY: tools
tools: $(CONTROLLER_GEN) $(GOLANGCI_LINT) $(KUBE_API_LINTER) $(HELM) $(HELM_DOCS) $(PROMTOOL) envtest ## Install every pinned tool the build and tests need into bin/.

$(CONTROLLER_GEN):
	tools/install.sh controller-gen >/dev/null
$(GOLANGCI_LINT):
	tools/install.sh golangci-lint >/dev/null
$(KUBE_API_LINTER):
	tools/install.sh kube-api-linter >/dev/null
$(HELM):
	tools/install.sh helm >/dev/null
$(HELM_DOCS):
	tools/install.sh helm-docs >/dev/null
$(PROMTOOL):
	tools/install.sh promtool >/dev/null
$(ENVTEST_DIR)/.envtest-ready:
	tools/install.sh envtest >/dev/null

.PHONY: clean
clean: ## Remove built binaries: the controllers, the cluster tool and bin/tools/ (bin/ keeps the pinned tools; `rm -rf bin` removes those too).
	rm -f $(addprefix $(BIN)/,$(BINARIES)) $(CLUSTER_TOOL)
	rm -rf $(BIN)/tools
