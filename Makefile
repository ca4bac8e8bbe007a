# spotpool build. `make` builds build/spotpool; `make check` installs what is
# missing and runs every test; `make check-asan` runs them under ASan+UBSan,
# `make check-tsan` under ThreadSanitizer.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
# The daemon looks for /etc/spotpool/spotpool.yaml, so configuration is not under PREFIX.
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DATADIR ?= $(PREFIX)/share/spotpool
MANDIR ?= $(PREFIX)/share/man
BUILD ?= build
CC ?= cc
PKGS = libcurl libcjson yaml-0.1 libsystemd libcrypto libmicrohttpd zlib
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

OPT ?= -O2 -g
# Bounded messages truncate on purpose, hence -Wno-format-truncation.
override CFLAGS += $(OPT) -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wno-format-truncation \
	-fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE -D_GNU_SOURCE -Iinclude \
	-DSPOTPOOL_VERSION='"$(VERSION)"' $(SANITIZE) \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null)
override LDFLAGS += -pie -Wl,-z,relro,-z,now $(SANITIZE)
override LDLIBS += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

SRCS := $(wildcard src/*.c)
LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(filter-out src/main.c,$(SRCS)))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

.PHONY: all deps check check-asan check-tsan unit clean install demo fuzz fuzz-build man
all: $(BUILD)/spotpool

$(BUILD)/obj/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)/obj
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libspotpool.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/spotpool: $(BUILD)/obj/main.o $(BUILD)/libspotpool.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libspotpool.a $(wildcard tests/unit/*.h) | $(BUILD)/tests
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libspotpool.a $(LDFLAGS) $(LDLIBS) -lcmocka

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

deps:
	scripts/install-deps

# The local end-to-end run: emulator + control plane + controller in the foreground.
demo:
	scripts/demo

unit: $(BUILD)/spotpool $(UNIT_BINS)

# The one test command: installs dependencies, builds, runs unit and end-to-end tests
# and ends with "N passed, M failed".
check: deps
	$(MAKE) unit
	tests/run-tests --build $(BUILD)

# Sanitized binaries take two to five times the CPU, so their end-to-end scripts run one
# at a time unless E2E_JOBS says otherwise (timings they check stay those of one).
check-asan: deps
	$(MAKE) unit BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
		SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
	rm -rf build-asan/sanitizer && mkdir -p build-asan/sanitizer
	SANITIZER_LOG_DIR=$(CURDIR)/build-asan/sanitizer \
	ASAN_OPTIONS=detect_leaks=1:exitcode=86:log_path=$(CURDIR)/build-asan/sanitizer/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build-asan/sanitizer/ubsan \
	E2E_JOBS=$${E2E_JOBS:-1} tests/run-tests --build build-asan

# ThreadSanitizer: every report fails the run (halt_on_error stops the process that
# raced; run-tests counts the report files, also of processes whose status nobody checked).
check-tsan: deps
	$(MAKE) unit BUILD=build-tsan OPT="-O1 -g -fno-omit-frame-pointer" SANITIZE="-fsanitize=thread"
	rm -rf build-tsan/sanitizer && mkdir -p build-tsan/sanitizer
	SANITIZER_LOG_DIR=$(CURDIR)/build-tsan/sanitizer \
	TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$(CURDIR)/build-tsan/sanitizer/tsan \
	E2E_JOBS=$${E2E_JOBS:-1} tests/run-tests --build build-tsan

# Fuzzing (libFuzzer): every tests/fuzz/fuzz_<name>.c, linked against the library built
# with clang and the same sanitizers in FUZZ_BUILD, runs FUZZ_SECONDS on its seed corpus
# tests/fuzz/corpus/<name> (new inputs go to FUZZ_BUILD/corpus/<name>, the committed seeds
# are only read). A crash, leak, UB or a slow input fails it; the input that did is kept in
# FUZZ_BUILD/artifacts. FUZZ_TARGETS="watch cvm" runs a subset.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS ?= -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
FUZZ_SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(BUILD)/libspotpool.a | $(BUILD)/fuzz
	$(CC) $(CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(BUILD)/libspotpool.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/fuzz:
	mkdir -p $@

fuzz-build: deps
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
		CFLAGS="-Wno-unknown-warning-option" SANITIZE="$(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link" \
		$(patsubst %,$(FUZZ_BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))

fuzz: fuzz-build
	mkdir -p $(FUZZ_BUILD)/artifacts
	@failed=; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
		dict=; [ ! -f tests/fuzz/$$t.dict ] || dict=-dict=tests/fuzz/$$t.dict; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		   $(FUZZ_BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) $$dict \
			-artifact_prefix=$(CURDIR)/$(FUZZ_BUILD)/artifacts/$$t- \
			$(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t > $(FUZZ_BUILD)/fuzz-$$t.log 2>&1; then \
			grep -E '^Done [0-9]+ runs' $(FUZZ_BUILD)/fuzz-$$t.log | sed "s/^/fuzz: $$t: /"; \
		else \
			tail -n 60 $(FUZZ_BUILD)/fuzz-$$t.log; failed="$$failed $$t"; \
			echo "fuzz: $$t FAILED (log $(FUZZ_BUILD)/fuzz-$$t.log)"; \
		fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed"; exit 1; fi

# Randomized fault campaign (tests/faults/campaign.py, CONTRIBUTING.md "Fault campaign"):
# SCHEDULES seeded schedules (seeds FIRST_SEED..), JOBS at a time, against one real
# apiserver; SEED=S replays exactly one; DURATION=MIN:MAX sets the fault phase (s);
# WITHOUT=tag_index,... leaves fault kinds out; FORCE=forged_label,... draws issue-27 kinds
# in every schedule.
SCHEDULES ?= 20
FIRST_SEED ?= 1
JOBS ?= 3
.PHONY: faults
faults: $(BUILD)/spotpool
	python3 tests/faults/campaign.py --bin $(BUILD)/spotpool --jobs $(JOBS) \
		$(if $(SEED),--seed $(SEED),--schedules $(SCHEDULES) --first-seed $(FIRST_SEED)) \
		$(if $(DURATION),--duration $(DURATION)) $(if $(WITHOUT),--without $(WITHOUT)) \
		$(if $(FORCE),--force $(FORCE))

# Benchmark against the emulator with Tencent's rate limits (scripts/bench; results and
# the machine go to BENCHMARKS.md): BENCH_SCENARIOS=idle,reclaim,create,memory,fleet,notice,drain,soldout,churn,
# BENCH_POOLS=1,10,100,1000, BENCH_IDLE_SECONDS=60; SPOTPOOL_BIN overrides the binary.
.PHONY: bench
bench: $(BUILD)/spotpool
	SPOTPOOL_BIN=$${SPOTPOOL_BIN:-$(CURDIR)/$(BUILD)/spotpool} scripts/bench

# The settings lists of the man pages are generated from src/cfg.c's table (committed;
# tests/e2e/test_docs.sh fails when they differ from it).
MAN_PAGES = man/spotpool.8 man/spotpool.yaml.5
man: $(BUILD)/spotpool
	scripts/gen-man $(BUILD)/spotpool $(MAN_PAGES)

# Installs the binary, the units of the controller and the notice agent (paths filled
# in), the configuration (kept if present), the CRDs and the man pages. DESTDIR stages
# the tree for packaging.
install: $(BUILD)/spotpool
	install -D -m 0755 $(BUILD)/spotpool $(DESTDIR)$(BINDIR)/spotpool
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/spotpool $(DESTDIR)$(DATADIR)
	for unit in spotpool spotpool-agent; do \
		sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' systemd/$$unit.service.in \
			> $(DESTDIR)$(UNITDIR)/$$unit.service && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit.service || exit 1; \
	done
	[ -e $(DESTDIR)$(SYSCONFDIR)/spotpool/spotpool.yaml ] || \
		install -m 0644 conf/spotpool.yaml $(DESTDIR)$(SYSCONFDIR)/spotpool/spotpool.yaml
	install -m 0644 conf/tencentcloud.yaml.example $(DESTDIR)$(DATADIR)/tencentcloud.yaml.example
	install -m 0644 crds/spotpool.yaml $(DESTDIR)$(DATADIR)/spotpool-crd.yaml
	install -m 0644 crds/spotnotice.yaml $(DESTDIR)$(DATADIR)/spotnotice-crd.yaml
	install -D -m 0644 man/spotpool.8 $(DESTDIR)$(MANDIR)/man8/spotpool.8
	install -D -m 0644 man/spotpool.yaml.5 $(DESTDIR)$(MANDIR)/man5/spotpool.yaml.5

clean:
	rm -rf build build-asan build-tsan build-fuzz
