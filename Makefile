# SPDX-License-Identifier: GPL-2.0
# rswap: remote memory over RDMA as a swap block device.
#
#   make                 build rswap.ko for Debian's stock 7.3 kernel (in the trixie build root)
#   make KERNEL=debug    ... for rswap's debug kernel (KASAN, lockdep)
#   make KDIR=/path      ... against a Rust-enabled kernel build tree of your own, on this host
#   make check           build what is missing, run every test, print "N passed, N failed"
#   make fuzz            the parsers' fuzz tests, FUZZ_CASES (1000000) inputs each (host only)
#   make demo            boot a guest, create rxe0, load rswap and show what it found
#   make bench           benchmarks (see Documentation/benchmarks.md)
#   make bench-apps      real applications at 100/75/50/25% local memory on every swap
#                        backend (also `make bench BENCH_ARGS=--apps`)
#   make fmt | fmtcheck  rustfmt with the kernel's settings
#   make deb             Debian packages rswap-dkms and rswap-tools in results/deb
#   make CLIPPY=1        build with clippy
#   make RSWAP_FAULT_INJECTION=y   rswap.ko with fault injection, for tests (make check)
#   make clean
#
# Inside the kernel build (Kbuild includes this file too) only the Kbuild file matters.
ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

KERNEL ?= stock
export KERNEL
V ?= 0
CLIPPY ?=
# y: build rswap.ko with its fault-injection parameters, as `make check` does for its tests.
RSWAP_FAULT_INJECTION ?=
kbuild_args = M=$(CURDIR) V=$(V) $(if $(CLIPPY),CLIPPY=1) \
	$(if $(RSWAP_FAULT_INJECTION),RSWAP_FAULT_INJECTION=$(RSWAP_FAULT_INJECTION))

.PHONY: all modules check fuzz demo bench bench-apps fmt fmtcheck clean server deb

all: modules

ifneq ($(KDIR),)
# A kernel tree of the user's own, built with Rust support (see Documentation/building.md).
modules:
	$(MAKE) -C $(KDIR) $(kbuild_args) modules
else
modules:
	bash scripts/build-module.sh $(kbuild_args) modules
endif

check:
	bash scripts/check.sh

# The property-based fuzz tests (proptest, `fuzz_*`) of the wire decoders, configfs
# values, metadata files and command lines with FUZZ_CASES cases each; `make check` runs
# them with proptest's default 256. See Documentation/testing.md.
FUZZ_CASES ?= 1000000
fuzz:
	cd tests/unit && PROPTEST_CASES=$(FUZZ_CASES) cargo test --release --locked fuzz_
	cd tools/rswap-server && PROPTEST_CASES=$(FUZZ_CASES) cargo test --release --locked fuzz_

demo:
	bash scripts/demo.sh

# Build what rswap's rows need; the baselines still run (rswap shows n/a) if that fails.
bench:
	-$(MAKE) -s modules
	-bash scripts/build-server.sh >/dev/null
	bash scripts/bench.sh $(BENCH_ARGS)

# BENCH_ARGS: --quick (smallest sizes), --full (the full sweep), --repeats N, --out DIR.
bench-apps:
	-$(MAKE) -s modules
	-bash scripts/build-server.sh >/dev/null
	bash scripts/bench.sh --apps $(BENCH_ARGS)

fmt:
	bash scripts/rustfmt.sh

fmtcheck:
	bash scripts/rustfmt.sh --check

server:
	bash scripts/build-server.sh

# See Documentation/packages.md.
deb:
	bash scripts/deb.sh

clean:
	rm -f rswap.ko rswap.o rswap.mod rswap.mod.c rswap.mod.o modules.order Module.symvers
	find src samples -name '*.o' -o -name '*.cmd' -o -name '*.d' -o -name '*.rmeta' \
		-o -name 'bindings_generated.rs' -o -name '*.mod' -o -name '*.mod.c' 2>/dev/null | xargs rm -f
	find . -name '.*.cmd' -not -path './.git/*' | xargs rm -f

endif
