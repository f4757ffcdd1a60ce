# vigil's contract with its users and developers: each target does one thing.
GO      ?= go
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
# The SPANK plugin, and where its plugstack.conf line and the example config go.
LIBDIR        ?= $(PREFIX)/lib/vigil
SYSCONFDIR    ?= /etc
PLUGSTACK_DIR ?= $(SYSCONFDIR)/slurm/plugstack.conf.d
VIGIL_TOML    ?= $(SYSCONFDIR)/vigil/vigil.toml
SPANK_WATCH   ?= auto
# The plugin's plugstack.conf line: $(call plugstack_line,PLUGIN_DIR,CONFIG,BINDIR).
plugstack_line = required $(1)/vigil_spank.so config=$(2) prolog=$(3)/vigil-prolog watcher=$(3)/vigil-watch watch=$(SPANK_WATCH)
PLUGSTACK_LINE = $(call plugstack_line,$(LIBDIR),$(VIGIL_TOML),$(BINDIR))
# <slurm/spank.h> of the Slurm the plugin is for: a plugin loads only in the Slurm major.minor it was built against.
SLURM_INCLUDE ?= /usr/include
# go-nvml's nvml.h uses deprecated declarations; keep the build quiet.
export CGO_CFLAGS ?= -Wno-deprecated-declarations
export CGO_ENABLED = 1

# Where make build puts the programs (the packages build into their own).
BIN  ?= bin
BINS := $(BIN)/vigil-prolog $(BIN)/vigil-epilog $(BIN)/vigil-watch $(BIN)/vigil-baseline
TEST_TIMEOUT ?= 30m
# The Go tools that make deps installs into the clone (.ci/tools: the same versions).
TOOLS_BIN ?= $(CURDIR)/.tools/bin
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(TOOLS_BIN)/staticcheck

.PHONY: all build deps run test test-short race lint bench fuzz install deb rpm clean

all: build

build: ## build bin/vigil-prolog, bin/vigil-epilog, bin/vigil-watch, bin/vigil-baseline, and bin/vigil_spank.so when libslurm-dev is installed
	$(GO) build -o $(BIN)/vigil-prolog ./prolog
	$(GO) build -o $(BIN)/vigil-epilog ./epilog
	$(GO) build -o $(BIN)/vigil-watch ./watcher
	$(GO) build -o $(BIN)/vigil-baseline ./baseline/cmd/vigil-baseline
	@if [ -f $(SLURM_INCLUDE)/slurm/spank.h ]; then $(MAKE) --no-print-directory -C slurm/spank OUT=$(abspath $(BIN))/vigil_spank.so SLURM_INCLUDE=$(SLURM_INCLUDE); \
	else echo "skipping the SPANK plugin: $(SLURM_INCLUDE)/slurm/spank.h not found (apt-get install libslurm-dev)"; fi

deps: ## install what vigil's build and tests need (root): Debian packages, the Slurm 24.11 root, staticcheck and nfpm in .tools/bin; parts in parallel, each timed
	bash .ci/deps

.PHONY: slurm-root
slurm-root: ## build the Debian 13 root with Slurm 24.11 that the e2e tests also run against (root; docs/testing.md)
	bash .ci/slurm-root

run: build ## run vigil's main job, the node sanity suite, on this machine without changing anything
	$(BIN)/vigil-prolog --dry-run

# The two longest packages (real Slurm clusters, real PyTorch jobs) go
# first, so that go test's two lanes start them at once and share out the
# rest, instead of starting the longest last.
LONGEST_TESTS = ./prolog ./watcher/realjob

test: ## run every test: unit, fuzz seeds, and e2e on a real local Slurm (root)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(LONGEST_TESTS) ./...

test-short: ## unit tests only: no Slurm cluster is started
	$(GO) test -count=1 -short ./...

race: ## the unit tests under the race detector
	$(GO) test -race -count=1 -short ./...

lint: ## gofmt, go vet and staticcheck (make deps installs it)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@test -x "$(STATICCHECK)" || { echo "$(STATICCHECK) not found: run make deps (or bash .ci/tools: staticcheck $(STATICCHECK_VERSION) into .tools/bin)"; exit 1; }
	$(STATICCHECK) ./...

bench: ## print vigil's performance figures
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

fuzz: ## run every Fuzz target of the module (found with go test -list), FUZZTIME each (default 30s), and print each one's result
	bash .ci/fuzz $(or $(FUZZTIME),30s)

install: build ## install the binaries, the SPANK plugin and its plugstack.conf line, and vigil.toml.example
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(BINS) $(DESTDIR)$(BINDIR)/
	ln -sf vigil-prolog $(DESTDIR)$(BINDIR)/vigil-health
	install -d $(DESTDIR)$(dir $(VIGIL_TOML))
	$(BIN)/vigil-prolog --print-example-config > $(DESTDIR)$(VIGIL_TOML).example.tmp
	mv $(DESTDIR)$(VIGIL_TOML).example.tmp $(DESTDIR)$(VIGIL_TOML).example
	@if [ -f $(BIN)/vigil_spank.so ]; then \
		$(MAKE) --no-print-directory -C slurm/spank install OUT=$(abspath $(BIN))/vigil_spank.so PLUGIN_DIR=$(DESTDIR)$(LIBDIR) && \
		install -d $(DESTDIR)$(PLUGSTACK_DIR) && \
		echo '$(PLUGSTACK_LINE)' > $(DESTDIR)$(PLUGSTACK_DIR)/vigil.conf && \
		echo "wrote $(DESTDIR)$(PLUGSTACK_DIR)/vigil.conf:" && echo '    $(PLUGSTACK_LINE)' && \
		echo "plugstack.conf must include it: include $(PLUGSTACK_DIR)/*.conf (then restart slurmd)"; \
	else echo "no $(BIN)/vigil_spank.so (libslurm-dev missing): the SPANK plugin and its plugstack.conf line were not installed"; fi
	@echo "slurm.conf:"
	@echo "    Prolog=$(BINDIR)/vigil-prolog"
	@echo "    PrologFlags=Alloc,Contain"
	@echo "    Epilog=$(BINDIR)/vigil-epilog"
	@echo "    HealthCheckProgram=$(BINDIR)/vigil-health"
	@echo "    HealthCheckInterval=300"
	@echo "config: $(VIGIL_TOML) (the plugin and vigil-watch read it; vigil-prolog reads /etc/vigil/vigil.toml unless VIGIL_CONFIG says otherwise); every key with its default: $(VIGIL_TOML).example"

# Packages (docs/operations.md#packages): nfpm, pinned, from the Go module proxy (make deps).
NFPM_VERSION   ?= v2.45.2
NFPM           ?= $(TOOLS_BIN)/nfpm
DIST           ?= dist
PKG_VERSION    ?= $(shell bash packaging/version)
PKG_MAINTAINER ?= vigil maintainers <maintainers@vigil-hpc.invalid>
# Debian puts Slurm's plugins in /usr/lib/<multiarch>/slurm-wlm, RHEL and SchedMD's spec in %{_libdir}/slurm.
DEB_MULTIARCH  ?= $(or $(shell $(CC) -print-multiarch 2>/dev/null),$(shell uname -m)-linux-gnu)
DEB_PLUGIN_DIR ?= /usr/lib/$(DEB_MULTIARCH)/slurm-wlm
RPM_PLUGIN_DIR ?= /usr/lib64/slurm
# $(call package,FORMAT,PLUGIN_DIR): nfpm packs $(DIST)/build into $(DIST)/.
package = FORMAT=$(1) PLUGIN_DIR=$(2) PLUGSTACK_LINE='$(call plugstack_line,$(2),/etc/vigil/vigil.toml,/usr/bin)' \
	DIST='$(DIST)' VERSION='$(PKG_VERSION)' MAINTAINER='$(PKG_MAINTAINER)' \
	NFPM='$(NFPM)' NFPM_VERSION=$(NFPM_VERSION) GO='$(GO)' SLURM_INCLUDE='$(SLURM_INCLUDE)' bash packaging/build

.PHONY: pkg-files
pkg-files: # what deb and rpm pack: the programs, the plugin (required here) and the example config, in $(DIST)/build
	@test -n "$(strip $(DIST))" || { echo "DIST is empty: name the directory for the packages" >&2; exit 1; }
	rm -rf $(DIST)/build
	$(MAKE) --no-print-directory build BIN=$(DIST)/build/bin
	@test -f $(DIST)/build/bin/vigil_spank.so || { echo "the packages need the SPANK plugin: $(SLURM_INCLUDE)/slurm/spank.h not found (apt-get install libslurm-dev)" >&2; exit 1; }
	$(DIST)/build/bin/vigil-prolog --print-example-config > $(DIST)/build/vigil.toml.example

deb: pkg-files ## build $(DIST)/vigil_VERSION-1_ARCH.deb: programs in /usr/bin, the plugin in Debian's Slurm plugin directory
	@$(call package,deb,$(DEB_PLUGIN_DIR))

rpm: pkg-files ## build $(DIST)/vigil-VERSION-1.ARCH.rpm: programs in /usr/bin, the plugin in /usr/lib64/slurm
	@$(call package,rpm,$(RPM_PLUGIN_DIR))

clean:
	rm -rf bin $(DIST)
