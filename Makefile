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
PLUGSTACK_LINE = required $(LIBDIR)/vigil_spank.so config=$(VIGIL_TOML) prolog=$(BINDIR)/vigil-prolog watcher=$(BINDIR)/vigil-watch watch=$(SPANK_WATCH)
# go-nvml's nvml.h uses deprecated declarations; keep the build quiet.
export CGO_CFLAGS ?= -Wno-deprecated-declarations
export CGO_ENABLED = 1

BINS := bin/vigil-prolog bin/vigil-epilog bin/vigil-watch bin/vigil-baseline
TEST_TIMEOUT ?= 30m
STATICCHECK_VERSION ?= 2025.1.1
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: all build deps run test test-short race lint bench fuzz install clean

all: build

build: ## build bin/vigil-prolog, bin/vigil-epilog, bin/vigil-watch, bin/vigil-baseline, and bin/vigil_spank.so when libslurm-dev is installed
	$(GO) build -o bin/vigil-prolog ./prolog
	$(GO) build -o bin/vigil-epilog ./epilog
	$(GO) build -o bin/vigil-watch ./watcher
	$(GO) build -o bin/vigil-baseline ./baseline/cmd/vigil-baseline
	@if [ -f /usr/include/slurm/spank.h ]; then $(MAKE) --no-print-directory -C slurm/spank OUT=$(CURDIR)/bin/vigil_spank.so; \
	else echo "skipping the SPANK plugin: /usr/include/slurm/spank.h not found (apt-get install libslurm-dev)"; fi

deps: ## install the Debian packages that vigil's tests and build need (root)
	bash .ci/deps
	bash .ci/slurm-root

.PHONY: slurm-root
slurm-root: ## build the Debian 13 root with Slurm 24.11 that the e2e tests also run against (root; docs/testing.md)
	bash .ci/slurm-root

run: build ## run vigil's main job, the node sanity suite, on this machine without changing anything
	./bin/vigil-prolog --dry-run

test: ## run every test: unit, fuzz seeds, and e2e on a real local Slurm (root)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

test-short: ## unit tests only: no Slurm cluster is started
	$(GO) test -count=1 -short ./...

race: ## the unit tests under the race detector
	$(GO) test -race -count=1 -short ./...

lint: ## gofmt, go vet and staticcheck (make deps installs it)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@test -x "$(STATICCHECK)" || { echo "$(STATICCHECK) not found: run make deps (go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION))"; exit 1; }
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
	./bin/vigil-prolog --print-example-config > $(DESTDIR)$(VIGIL_TOML).example.tmp
	mv $(DESTDIR)$(VIGIL_TOML).example.tmp $(DESTDIR)$(VIGIL_TOML).example
	@if [ -f bin/vigil_spank.so ]; then \
		$(MAKE) --no-print-directory -C slurm/spank install OUT=$(CURDIR)/bin/vigil_spank.so PLUGIN_DIR=$(DESTDIR)$(LIBDIR) && \
		install -d $(DESTDIR)$(PLUGSTACK_DIR) && \
		echo '$(PLUGSTACK_LINE)' > $(DESTDIR)$(PLUGSTACK_DIR)/vigil.conf && \
		echo "wrote $(DESTDIR)$(PLUGSTACK_DIR)/vigil.conf:" && echo '    $(PLUGSTACK_LINE)' && \
		echo "plugstack.conf must include it: include $(PLUGSTACK_DIR)/*.conf (then restart slurmd)"; \
	else echo "no bin/vigil_spank.so (libslurm-dev missing): the SPANK plugin and its plugstack.conf line were not installed"; fi
	@echo "slurm.conf:"
	@echo "    Prolog=$(BINDIR)/vigil-prolog"
	@echo "    PrologFlags=Alloc,Contain"
	@echo "    Epilog=$(BINDIR)/vigil-epilog"
	@echo "    HealthCheckProgram=$(BINDIR)/vigil-health"
	@echo "    HealthCheckInterval=300"
	@echo "config: $(VIGIL_TOML) (the plugin and vigil-watch read it; vigil-prolog reads /etc/vigil/vigil.toml unless VIGIL_CONFIG says otherwise); every key with its default: $(VIGIL_TOML).example"

clean:
	rm -rf bin
