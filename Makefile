# Upshift — build, test and generate from a fresh clone with nothing but Go.
#
# The control-plane binaries the tests run (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) and the developer tools
# (controller-gen, staticcheck, helm) are built from the Go modules pinned under
# tools/build/, into bin/, keyed by version: they are built once and reused.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT    := $(abspath .)
BIN     := $(ROOT)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/upshift-io/upshift/libs/buildinfo.version=$(VERSION)

# Every workspace module; `go` commands below run across all of them (those
# with Go code yet: `go test` fails on a pattern that matches nothing).
MODULES  := api libs cmd e2e tools $(wildcard services/*)
PKGS     := $(foreach m,$(MODULES),$(if $(shell find $(m) -name '*.go' -not -path '*/build/*' -print -quit),./$(m)/...))

# The unit and controller packages run under the race detector (RACE): their
# controllers, informers and simulators run in the test process. The e2e
# suites run the binaries as processes of their own, and the commands and
# tools are thin, so those run without it.
RACE_PKGS  := $(filter $(foreach m,api libs $(wildcard services/*),./$(m)/...),$(PKGS))
# The longest suite is listed first so that it starts first: go test runs
# packages in the order given, TEST_PARALLEL at a time, and the longest one
# started last would run alone at the end while the other lanes idle.
SLOWEST_PKG := ./e2e/upgradescheduler
PLAIN_PKGS := $(SLOWEST_PKG) $(filter-out $(RACE_PKGS),$(PKGS))
RACE       ?= -race

# Versions come from the builder modules' go.mod files: one source of truth.
modver = $(shell sed -nE 's|^(require)?[[:space:]]*$(1) (v[^ ]+).*|\2|p' tools/build/$(2)/go.mod | head -1)
KUBE_VERSION           := $(call modver,k8s.io/kubernetes,kube)
ETCD_VERSION           := $(call modver,go.etcd.io/etcd/server/v3,etcd)
KWOK_VERSION           := $(call modver,sigs.k8s.io/kwok,kwok)
CONTROLLER_GEN_VERSION := $(call modver,sigs.k8s.io/controller-tools,controller-gen)
STATICCHECK_VERSION    := $(call modver,honnef.co/go/tools,staticcheck)
HELM_VERSION           := $(call modver,helm.sh/helm/v3,helm)
ALERTMANAGER_VERSION   := $(call modver,github.com/prometheus/alertmanager,alertmanager)
PROMETHEUS_VERSION     := $(call modver,github.com/prometheus/prometheus,promtool)

TESTBIN_KEY := k8s-$(KUBE_VERSION)_etcd-$(ETCD_VERSION)_kwok-$(KWOK_VERSION)
TESTBIN     := $(BIN)/testbin/$(TESTBIN_KEY)
# Alertmanager is versioned in its file name rather than in the key, so adding
# or bumping it builds only it, not the whole control plane again.
ALERTMANAGER  := alertmanager-$(ALERTMANAGER_VERSION)
# promtool too: it runs the charts' alert unit tests (e2e/alertrules).
PROMTOOL      := promtool-$(PROMETHEUS_VERSION)
TESTBIN_FILES := $(addprefix $(TESTBIN)/,kube-apiserver kube-controller-manager kube-scheduler etcd kwok kwok-stages.yaml kwok-stages-lease.yaml $(ALERTMANAGER) $(PROMTOOL))

CONTROLLER_GEN := $(BIN)/tools/controller-gen-$(CONTROLLER_GEN_VERSION)
STATICCHECK    := $(BIN)/tools/staticcheck-$(STATICCHECK_VERSION)
HELM           := $(BIN)/tools/helm-$(HELM_VERSION)

# tools/promql parses PromQL with Prometheus's own parser for the tests of the
# workspace (e2e/framework runs it). It is a module outside go.work: the
# Prometheus module would move the workspace's k8s.io libraries.
PROMQL_TOOL := $(BIN)/upshift-promql

# Tests find the control plane here (libs/testenv reads it).
export UPSHIFT_TESTBIN := $(TESTBIN)
export UPSHIFT_HELM := $(HELM)
export UPSHIFT_PROMQL := $(PROMQL_TOOL)

GO_TEST_FLAGS ?=
TEST_TIMEOUT  ?= 30m
# Packages tested at once. The suites spend most of their time waiting on
# simulated clusters, so two run side by side on 2 cores; each starts its own
# control plane on free ports (about 1 GiB each).
TEST_PARALLEL ?= 2

# Builder modules stay outside go.work: build each on its own.
gobuild_tool = GOWORK=off go build -C $(ROOT)/tools/build/$(1) -trimpath -o $(2) $(3)

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2} /^##@/ {printf "\n%s\n", substr($$0, 5)}' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build every binary into bin/.
	@mkdir -p $(BIN)
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ $(shell go list ./cmd/... ./tools/cmd/... 2>/dev/null)

.PHONY: demo
demo: testbin build ## Run an update on a local simulated OpenShift cluster and watch `kubectl upshift status`, then roll the control-plane machines (DEMO_ARO=1: aro-monitor on a simulated ARO cluster instead).
	go build -o $(BIN)/upshift-demo ./e2e/cmd/upshift-demo
	$(BIN)/upshift-demo --bin-dir $(BIN)

# BENCH is the upshift-bench subcommand: update-status (the default),
# mcp-tracker, node-gate or system.
BENCH ?=
.PHONY: bench
bench: testbin build ## Measure the update-status-controller on a 5,000-node simulated cluster (BENCH_FLAGS=--sweep=10,30,100 for the time-scale sweep; BENCH=mcp-tracker, or BENCH_FLAGS=--component=mcp-tracker, measures the mcp-tracker, BENCH=node-gate node-gate on 500 workers, BENCH=system every component against none).
	go build -o $(BIN)/upshift-bench ./e2e/cmd/upshift-bench
	$(BIN)/upshift-bench $(BENCH) --bin-dir $(BIN) $(BENCH_FLAGS)

##@ Release

# Every main under cmd/ gets an image: this list is the one place that says
# which binaries ship as images (filter one out here to stop shipping it).
# upshift-must-gather is left out: `oc adm must-gather` runs its image through
# bash and copies its output with tar, which a scratch image cannot do; its
# image is the Containerfile's upshift-must-gather stage (docs/release.md).
IMAGES          ?= $(filter-out upshift-must-gather,$(patsubst cmd/%/main.go,%,$(wildcard cmd/*/main.go)))
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# The images carry the repository's licence (LICENSE) as their licenses label.
IMAGE_LICENSES  ?= Apache-2.0
REVISION        ?= $(shell git rev-parse HEAD 2>/dev/null)
# Every timestamp in an image is this one, so rebuilding a commit gives the
# same digest: SOURCE_DATE_EPOCH if set, else the commit's time.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH
CLI_PLATFORMS   ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST            := $(ROOT)/dist
RELEASE_TOOL    := $(BIN)/upshift-release

# tools/release is outside go.work (go-containerregistry's dependency graph
# stays out of ours), like the builders under tools/build/.
.PHONY: $(RELEASE_TOOL)
$(RELEASE_TOOL):
	@mkdir -p $(BIN)
	GOWORK=off go build -C $(ROOT)/tools/release -trimpath -o $@ ./cmd/upshift-release

# tools/olm is outside go.work too: operator-framework's libraries pin their
# own (older) k8s.io modules and bring k8s.io/apiserver and cel-go, which
# must not move or join the workspace's graph.
OLM_TOOL        := $(BIN)/upshift-olm
# The charts made into OLM bundles. node-gate and aro-monitor render objects a
# bundle cannot carry (tools/olm/cmd/upshift-olm/packages.go says why).
BUNDLES         ?= update-status-controller upgrade-scheduler mcp-tracker cpms-controller
BUNDLE_REGISTRY ?= ghcr.io/upshift-io
# Extra helm values, [<chart>:]key=value each, e.g. cpms-controller:image.digest=sha256:...
BUNDLE_SET      ?=

# Built without -trimpath (it is not shipped), so that it reuses what
# make test compiled for tools/olm instead of building its dependencies again.
.PHONY: $(OLM_TOOL)
$(OLM_TOOL):
	@mkdir -p $(BIN)
	GOWORK=off go build -C $(ROOT)/tools/olm -o $@ ./cmd/upshift-olm

.PHONY: bundles
bundles: $(OLM_TOOL) $(HELM) $(RELEASE_TOOL) ## OLM bundles of the component charts into dist/bundles/<package>/ and their file-based catalog into dist/catalog/, versioned like the charts.
	$(OLM_TOOL) --charts $(ROOT)/charts --helm $(HELM) --version $$($(RELEASE_TOOL) chart-version $(VERSION)) --app-version $(VERSION) \
		--out $(DIST)/bundles --catalog $(DIST)/catalog --registry $(BUNDLE_REGISTRY) \
		$(addprefix --set ,$(BUNDLE_SET)) $(BUNDLES)

.PHONY: images
images: $(RELEASE_TOOL) ## Build an OCI image (amd64+arm64 index) per binary into dist/images/<binary>/, no container daemon.
	$(RELEASE_TOOL) images --root $(ROOT) --out $(DIST)/images --work $(DIST)/build \
		--platforms $(IMAGE_PLATFORMS) --version $(VERSION) --revision $(REVISION) \
		--licenses $(IMAGE_LICENSES) $(IMAGES)

.PHONY: push
push: $(RELEASE_TOOL) ## Push dist/images to REGISTRY (e.g. make push REGISTRY=ghcr.io/upshift-io); run make images first.
	@[ -n "$(REGISTRY)" ] || { echo "usage: make push REGISTRY=<registry>/<org>"; exit 1; }
	$(RELEASE_TOOL) push --registry $(REGISTRY) $(addprefix $(DIST)/images/,$(IMAGES))

.PHONY: charts
charts: $(HELM) $(RELEASE_TOOL) ## Package every chart and the umbrella chart into dist/charts/, versioned by the release.
	@rm -rf $(DIST)/charts $(DIST)/chart-src && mkdir -p $(DIST)/charts $(DIST)/chart-src
	@for c in charts/*/; do [ -f $$c/Chart.yaml ] && cp -r $$c $(DIST)/chart-src/; done
	@# Stamp the release into every chart: version <VERSION without v> (or
	@# 0.0.0-<describe> for a commit), appVersion <VERSION>, the default image
	@# tag, which is the tag `make push` pushes (tools/release/chart).
	$(RELEASE_TOOL) stamp-charts --version $(VERSION) $(DIST)/chart-src
	@for c in $(DIST)/chart-src/*/; do grep -q '^dependencies:' $$c/Chart.yaml || continue; \
		rm -rf $$c/charts $$c/Chart.lock; $(HELM) dependency update --skip-refresh $$c >/dev/null; done
	@for c in $(DIST)/chart-src/*/; do $(HELM) lint --strict --kube-version $(KUBE_VERSION) $$c >/dev/null && $(HELM) package $$c -d $(DIST)/charts; done
	@rm -rf $(DIST)/chart-src

.PHONY: cli
cli: $(RELEASE_TOOL) ## Build kubectl-upshift for every CLI platform into dist/cli/ (archives for krew, SHA256SUMS).
	@rm -rf $(DIST)/cli && mkdir -p $(DIST)/cli
	@for p in $(CLI_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		name=kubectl-upshift_$(VERSION)_$${os}_$${arch}; stage=$(DIST)/cli/.stage/$$name; mkdir -p $$stage; \
		echo "== kubectl-upshift $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -buildvcs=false -ldflags '-s -w -buildid= $(LDFLAGS)' \
			-o $$stage/kubectl-upshift$$ext ./cmd/kubectl-upshift; \
		tar -C $$stage --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner -cf - kubectl-upshift$$ext \
			| gzip -n9 > $(DIST)/cli/$$name.tar.gz; \
		cp $$stage/kubectl-upshift$$ext $(DIST)/cli/$$name$$ext; done
	@rm -rf $(DIST)/cli/.stage
	$(RELEASE_TOOL) checksums $(DIST)/cli

.PHONY: release
release: $(RELEASE_TOOL) images charts cli ## Images, charts, the CLI for every platform with checksums, and the changelog section, under dist/.
	$(RELEASE_TOOL) checksums $(DIST)/charts
	$(RELEASE_TOOL) changelog --root $(ROOT) --version $(VERSION) > $(DIST)/CHANGELOG.md
	@sed -e 's/{{VERSION}}/$(VERSION)/g' $(foreach p,$(CLI_PLATFORMS),-e "s/{{SHA256_$(subst /,_,$(p))}}/$$(sha256sum $(DIST)/cli/kubectl-upshift_$(VERSION)_$(subst /,_,$(p)).tar.gz | cut -d' ' -f1)/g") \
		docs/krew/upshift.yaml > $(DIST)/krew-upshift.yaml
	@echo "== dist/:"; cd $(DIST) && ls -1 images charts cli CHANGELOG.md krew-upshift.yaml

##@ Test

.PHONY: promql
promql: $(PROMQL_TOOL) ## Build upshift-promql, Prometheus's PromQL parser for the tests' checks of the charts' queries.

.PHONY: $(PROMQL_TOOL)
$(PROMQL_TOOL):
	@mkdir -p $(BIN)
	GOWORK=off go build -C $(ROOT)/tools/promql -trimpath -o $@ ./cmd/upshift-promql

.PHONY: test
test: testbin $(PROMQL_TOOL) ## Run the unit, controller and e2e suites (builds the test control plane first if missing).
	@echo "== compiling every package and test binary (unit and controller packages with '$(RACE)')"
	@start=$$(date +%s); go test -count=1 -run '^$$' $(RACE) $(RACE_PKGS) >/dev/null && go test -count=1 -run '^$$' $(PLAIN_PKGS) >/dev/null; echo "   took $$(( $$(date +%s) - start ))s"
	@echo "== running the unit and controller tests with '$(RACE)' ($(TEST_PARALLEL) packages at a time; each suite starts its own control plane)"
	@start=$$(date +%s); go test -p $(TEST_PARALLEL) -count=1 -timeout $(TEST_TIMEOUT) $(RACE) $(GO_TEST_FLAGS) $(RACE_PKGS); echo "   took $$(( $$(date +%s) - start ))s"
	@echo "== running the e2e suites and the tests of the commands and tools"
	@start=$$(date +%s); go test -p $(TEST_PARALLEL) -count=1 -timeout $(TEST_TIMEOUT) $(GO_TEST_FLAGS) $(PLAIN_PKGS); echo "   took $$(( $$(date +%s) - start ))s"
	@$(MAKE) --no-print-directory fuzz
	@echo "== the PromQL tooling (Prometheus's parser, outside the workspace)"
	@start=$$(date +%s); GOWORK=off go test -C tools/promql -count=1 -timeout $(TEST_TIMEOUT) $(GO_TEST_FLAGS) ./...; echo "   took $$(( $$(date +%s) - start ))s"
	@echo "== release tooling (images: build, unpack, run, rebuild to the same digest)"
	@start=$$(date +%s); GOWORK=off go test -C tools/release -count=1 -timeout $(TEST_TIMEOUT) $(GO_TEST_FLAGS) ./...; echo "   took $$(( $$(date +%s) - start ))s"
	@echo "== OLM bundles and catalog (every packaged chart rendered, converted and checked by the operator-framework validators)"
	@start=$$(date +%s); GOWORK=off go test -C tools/olm -count=1 -timeout $(TEST_TIMEOUT) $(GO_TEST_FLAGS) ./...; echo "   took $$(( $$(date +%s) - start ))s"

# CHAOS_SEED replays a `make chaos` run (its seed is printed at start); 0 draws one.
CHAOS_SEED ?= 0

.PHONY: chaos
chaos: testbin ## Run the whole-system suite's long profile: 150 workers, 60 leader kills, 3 split brains, 4 apiserver and 2 Alertmanager restarts (CHAOS_SEED to replay).
	@echo "== whole-system suite, long profile"
	@start=$$(date +%s); go test -count=1 -timeout 60m -v ./e2e/system/ -run TestSystem -args -system.profile=long -system.seed=$(CHAOS_SEED) -ginkgo.v; echo "   took $$(( $$(date +%s) - start ))s"

# FUZZ_TARGETS are the fuzz tests of the parsers of outside input, as
# <package>:<Fuzz function>; their seeds also run with every `go test`.
FUZZ_TARGETS := ./libs/window:FuzzSchedule ./libs/mcostate:FuzzPhaseOf ./services/upgradescheduler/config:FuzzParse \
	./services/upgradescheduler/ocm:FuzzAccessToken ./services/upgradescheduler/ocm:FuzzUpgradePolicies \
	./services/cpms/platform:FuzzProviderSpec ./libs/alerts:FuzzAlertmanagerPayloads ./libs/alerts:FuzzPrometheusAlerts \
	./services/upgradescheduler/ocm:FuzzAgentBodies ./services/updatestatus/snapshot:FuzzBlockYAML
# A count of executions, not a duration: with a duration, Go 1.26's fuzzing
# coordinator can fail a target with "context deadline exceeded" and no
# failing input at the very end of the window (golang/go#75804, fixed in Go
# 1.27); a count has no deadline to race. 10000 runs take a few seconds for
# the slowest target here.
FUZZ_TIME ?= 10000x

.PHONY: fuzz
fuzz: ## Fuzz each parser of outside input for FUZZ_TIME (a failing input is written to the package's testdata/fuzz; keep it as a seed).
	@echo "== fuzzing each parser of outside input for $(FUZZ_TIME)"
	@start=$$(date +%s); for t in $(FUZZ_TARGETS); do \
		go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZ_TIME) "$${t%%:*}" || exit 1; \
	done; echo "   took $$(( $$(date +%s) - start ))s"

.PHONY: fuzz-corpus
fuzz-corpus: ## Copy the inputs fuzzing kept (Go's cache) into each target's committed corpus, testdata/fuzz/<target>.
	@for t in $(FUZZ_TARGETS); do pkg="$${t%%:*}"; name="$${t#*:}"; \
		from="$$(go env GOCACHE)/fuzz/$$(go list "$$pkg")/$$name"; [ -d "$$from" ] || continue; \
		mkdir -p "$$pkg/testdata/fuzz/$$name" && cp -n "$$from"/* "$$pkg/testdata/fuzz/$$name/"; \
		echo "$$pkg/testdata/fuzz/$$name: $$(ls "$$pkg/testdata/fuzz/$$name" | wc -l) inputs"; \
	done

.PHONY: testbin
testbin: $(TESTBIN_FILES) $(HELM) ## Build the test control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok), Alertmanager, promtool and helm.
	@ln -sfn $(TESTBIN_KEY) $(BIN)/testbin/current

$(TESTBIN)/kube-apiserver $(TESTBIN)/kube-controller-manager $(TESTBIN)/kube-scheduler:
	@echo "== building $(@F) $(KUBE_VERSION) (several minutes the first time)"
	@mkdir -p $(@D)
	$(call gobuild_tool,kube,$@,k8s.io/kubernetes/cmd/$(@F))

$(TESTBIN)/etcd:
	@echo "== building etcd $(ETCD_VERSION)"
	@mkdir -p $(@D)
	$(call gobuild_tool,etcd,$@,.)

$(TESTBIN)/kwok:
	@echo "== building kwok $(KWOK_VERSION)"
	@mkdir -p $(@D)
	$(call gobuild_tool,kwok,$@,sigs.k8s.io/kwok/cmd/kwok)

$(TESTBIN)/$(ALERTMANAGER):
	@echo "== building alertmanager $(ALERTMANAGER_VERSION)"
	@mkdir -p $(@D)
	@# Stamp the version as its release builds do, so /api/v2/status tells it.
	$(call gobuild_tool,alertmanager,$@.tmp,-ldflags '-X github.com/prometheus/common/version.Version=$(ALERTMANAGER_VERSION:v%=%)' github.com/prometheus/alertmanager/cmd/alertmanager) && mv $@.tmp $@

$(TESTBIN)/$(PROMTOOL):
	@echo "== building promtool $(PROMETHEUS_VERSION) (a few minutes the first time)"
	@mkdir -p $(@D)
	$(call gobuild_tool,promtool,$@.tmp,github.com/prometheus/prometheus/cmd/promtool) && mv $@.tmp $@

# kwok refuses to start without stages: take the ones its module ships, with
# one of its two node heartbeats. kwok-stages.yaml has its default (every
# Node's status patched every 20-25 s); kwok-stages-lease.yaml the one for
# Nodes with a Lease, as OpenShift's kubelets hold (kwok renews it every 10 s
# and reports status every 10 min), which testenv.Options.KwokNodeLeases
# picks (the benchmarks).
KWOK_STAGES = dir=$$(GOWORK=off go list -C tools/build/kwok -m -f '{{.Dir}}' sigs.k8s.io/kwok); \
	for f in $$dir/kustomize/stage/node/fast/*.yaml $$dir/kustomize/stage/node/$(1)/*.yaml $$dir/kustomize/stage/pod/fast/*.yaml; do \
		case $$f in */kustomization.yaml) continue;; esac; echo "---"; cat $$f; done > $@.tmp && mv $@.tmp $@

$(TESTBIN)/kwok-stages.yaml:
	@mkdir -p $(@D)
	$(call KWOK_STAGES,heartbeat)

$(TESTBIN)/kwok-stages-lease.yaml:
	@mkdir -p $(@D)
	$(call KWOK_STAGES,heartbeat-with-lease)

$(CONTROLLER_GEN):
	$(call gobuild_tool,controller-gen,$@,sigs.k8s.io/controller-tools/cmd/controller-gen)

$(STATICCHECK):
	$(call gobuild_tool,staticcheck,$@,honnef.co/go/tools/cmd/staticcheck)

# Stamped as helm's own release builds are: without it, helm renders for
# Kubernetes 1.20 when no cluster or --kube-version tells it otherwise, and
# refuses every chart (their kubeVersion is 1.29 or later). The Kubernetes
# version is that of the client-go helm is built with.
HELM_KUBE_MINOR := $(word 2,$(subst ., ,$(call modver,k8s.io/client-go,helm)))
$(HELM):
	@echo "== building helm $(HELM_VERSION)"
	$(call gobuild_tool,helm,$@,-ldflags '-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(HELM_KUBE_MINOR)' helm.sh/helm/v3/cmd/helm)

##@ Code generation and checks

# The OpenShift CRDs we install in tests and in the demo, copied from the
# pinned github.com/openshift/api module (the -Default feature set, or the
# self-managed variant where there is no Default).
OPENSHIFT_CRDS := \
	config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml \
	config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml \
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml \
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigpools-SelfManagedHA.crd.yaml \
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigs.crd.yaml \
	machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machines-Default.crd.yaml \
	machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml \
	machine/v1/zz_generated.crd-manifests/0000_10_control-plane-machine-set_01_controlplanemachinesets-Default.crd.yaml \
	operator/v1/zz_generated.crd-manifests/0000_50_ingress_00_ingresscontrollers-Default.crd.yaml \
	operator/v1/zz_generated.crd-manifests/0000_70_dns_00_dnses.crd.yaml

# The ControlPlaneMachineSets of openshift/api's own CRD tests for AWS, Azure,
# GCP and OpenStack (every platform it has suites for), with the upstream's
# expected outcome of each: e2e/cpms applies them unchanged. Only the suites
# that hold for the Default feature set (the CRD above): those without
# feature gates, and those for MachineAPIMigration off (a TechPreview gate).
CPMS_UPSTREAM_TESTS_DIR := machine/v1/tests/controlplanemachinesets.machine.openshift.io
CPMS_UPSTREAM_TESTS := \
	stable.controlplanemachineset.aws.testsuite.yaml \
	stable.controlplanemachineset.aws.nomachineapimigration.testsuite.yaml \
	stable.controlplanemachineset.azure.testsuite.yaml \
	stable.controlplanemachineset.gcp.testsuite.yaml \
	stable.controlplanemachineset.openstack.testsuite.yaml \
	stable.controlplanemachineset.openstack.nomachineapimigration.testsuite.yaml
CPMS_UPSTREAM_TESTDATA := e2e/cpms/testdata/openshift-api

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, apply configurations and CRD manifests (api/crds/), the charts' console dashboards, and copy the OpenShift CRDs and CPMS test objects.
	cd api && $(CONTROLLER_GEN) object paths=./... && $(CONTROLLER_GEN) crd paths=./... output:crd:artifacts:config=crds
	@# Apply configurations (<group>/v1alpha1/applyconfiguration/) for the
	@# packages marked +kubebuilder:ac:generate: typed server-side apply.
	@rm -rf api/*/v1alpha1/applyconfiguration
	cd api && $(CONTROLLER_GEN) applyconfiguration paths=./...
	@# nodegate.upshift.io embeds four batch/v1 JobSpec schemas: with field
	@# descriptions its MutexRule CRD is 1.28 MB of JSON, close to etcd's
	@# 1.5 MiB request limit, so its CRDs are written again without them.
	@# Embedded ObjectMeta keeps the Job templates' labels and annotations.
	cd api && $(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./nodegate/... output:crd:artifacts:config=crds
	@# Still 263 KB of JSON: over the 256 KiB a client-side kubectl apply
	@# records. tools/crdtrim replaces the schema of the one pod-template field
	@# no template may set (ephemeralContainers) with a rule refusing it.
	go run -C tools ./crdtrim $(ROOT)/api/crds/nodegate.upshift.io_mutexrules.yaml
	@rm -rf api/crds/openshift && mkdir -p api/crds/openshift
	@dir=$$(go list -C libs -m -f '{{.Dir}}' github.com/openshift/api); \
	for f in $(OPENSHIFT_CRDS); do cp $$dir/$$f api/crds/openshift/; done; chmod u+w api/crds/openshift/*; \
	rm -rf $(CPMS_UPSTREAM_TESTDATA) && mkdir -p $(CPMS_UPSTREAM_TESTDATA); \
	for f in $(CPMS_UPSTREAM_TESTS); do cp $$dir/$(CPMS_UPSTREAM_TESTS_DIR)/$$f $(CPMS_UPSTREAM_TESTDATA)/; done; chmod u+w $(CPMS_UPSTREAM_TESTDATA)/*
	@# Each chart's OpenShift console dashboard, generated from its Grafana
	@# dashboard (tools/consoledash).
	go run ./tools/cmd/console-dashboards --root $(ROOT) >/dev/null
	@# Charts carry their CRDs as plain files (templates/crds.yaml installs
	@# and upgrades them): copies of api/crds, kept current here.
	@for c in charts/*/; do [ -d $$c/files/crds ] || continue; \
		for f in $$c/files/crds/*.yaml; do cp api/crds/$$(basename $$f) $$f; done; done
	@# The templates every component chart shares (charts/_shared/README.md),
	@# copied into each chart that has no dependencies.
	@for c in charts/*/; do [ -f $$c/Chart.yaml ] && ! grep -q '^dependencies:' $$c/Chart.yaml || continue; \
		cp charts/_shared/templates/* $$c/templates/; done
	@# Every chart's README.md, from its Chart.yaml, README.intro.md, values.schema.json
	@# and values.yaml (tools/chartdoc): a value without a description fails here.
	go run ./tools/cmd/chartdoc charts

.PHONY: verify
verify: generate ## Fail if generated files are not up to date.
	@if [ -n "$$(git status --porcelain -- api charts $(CPMS_UPSTREAM_TESTDATA))" ]; then \
		echo "generated files are stale; run 'make generate' and commit:"; git status --porcelain -- api charts $(CPMS_UPSTREAM_TESTDATA); exit 1; fi

.PHONY: lint
lint: $(STATICCHECK) $(HELM) ## go vet, gofmt, staticcheck and helm lint.
	go vet $(PKGS)
	GOWORK=off go vet -C tools/release ./...
	GOWORK=off go vet -C tools/olm ./...
	GOWORK=off go vet -C tools/promql ./...
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(STATICCHECK) $(PKGS)
	cd tools/release && GOWORK=off $(STATICCHECK) ./...
	cd tools/olm && GOWORK=off $(STATICCHECK) ./...
	cd tools/promql && GOWORK=off $(STATICCHECK) ./...
	@# Charts with dependencies (the umbrella) need them built to lint.
	@for c in charts/*/; do [ -f $$c/Chart.yaml ] || continue; \
		if grep -q '^dependencies:' $$c/Chart.yaml; then $(HELM) dependency update --skip-refresh $$c >/dev/null; fi; \
		$(HELM) lint --strict --kube-version $(KUBE_VERSION) $$c; done

.PHONY: tidy
tidy: ## go mod tidy in every module.
	@for m in $(MODULES); do (cd $$m && go mod tidy); done
	cd tools/release && GOWORK=off go mod tidy
	cd tools/olm && GOWORK=off go mod tidy
	cd tools/promql && GOWORK=off go mod tidy

.PHONY: clean
clean: ## Remove built binaries and dist/ (keeps the test control plane).
	rm -f $(filter-out $(BIN)/testbin $(BIN)/tools,$(wildcard $(BIN)/*))
	rm -rf $(DIST)
