# spotpool build. `make` builds build/spotpool; `make check` installs what is
# missing and runs every test; `make check-asan` runs them under ASan+UBSan.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
# The daemon looks for /etc/spotpool/spotpool.yaml, so configuration is not under PREFIX.
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DATADIR ?= $(PREFIX)/share/spotpool
BUILD ?= build
CC ?= cc
PKGS = libcurl libcjson yaml-0.1 libsystemd libcrypto libmicrohttpd
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

.PHONY: all deps check check-asan unit clean install demo
all: $(BUILD)/spotpool

$(BUILD)/obj/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)/obj
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libspotpool.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/spotpool: $(BUILD)/obj/main.o $(BUILD)/libspotpool.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libspotpool.a tests/unit/testutil.h | $(BUILD)/tests
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

check-asan: deps
	$(MAKE) unit BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
		SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
	rm -rf build-asan/sanitizer && mkdir -p build-asan/sanitizer
	SANITIZER_LOG_DIR=$(CURDIR)/build-asan/sanitizer \
	ASAN_OPTIONS=detect_leaks=1:exitcode=86:log_path=$(CURDIR)/build-asan/sanitizer/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build-asan/sanitizer/ubsan \
		tests/run-tests --build build-asan

# Installs the binary, the unit (paths filled in), the configuration (kept if present)
# and the CRD. DESTDIR stages the tree for packaging.
install: $(BUILD)/spotpool
	install -D -m 0755 $(BUILD)/spotpool $(DESTDIR)$(BINDIR)/spotpool
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/spotpool $(DESTDIR)$(DATADIR)
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' systemd/spotpool.service.in \
		> $(DESTDIR)$(UNITDIR)/spotpool.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/spotpool.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/spotpool/spotpool.yaml ] || \
		install -m 0644 conf/spotpool.yaml $(DESTDIR)$(SYSCONFDIR)/spotpool/spotpool.yaml
	install -m 0644 conf/tencentcloud.yaml.example $(DESTDIR)$(DATADIR)/tencentcloud.yaml.example
	install -m 0644 crds/spotpool.yaml $(DESTDIR)$(DATADIR)/spotpool-crd.yaml

clean:
	rm -rf build build-asan
