# hconvert: the only build system. `make` builds build/hconvert and the libraries,
# `make test` runs every test (plain and under ASan+UBSan), `make demo` runs the main job.

CC       ?= cc
PREFIX   ?= /usr/local
BUILD    := build
VERSION  := 0.1.0

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla
# gcc warns that error messages may be cut at the buffer size: they are, on purpose
WARN     += $(shell $(CC) -Werror -Wno-format-truncation -x c -c /dev/null -o /dev/null \
              2>/dev/null && echo -Wno-format-truncation)
CUDA_HOME?= /usr/local/cuda
# The layers (docs/DESIGN.md): each folder is compiled with only the include paths it may use,
# so an include against the direction convert -> repack -> formats -> (base, contract) or
# runtime -> (base, contract, kernels) fails the build. include/ is the public API.
INC_base     := -Iinclude -Ibase
INC_contract := $(INC_base) -Icontract
INC_formats  := $(INC_contract) -Iformats
INC_repack   := $(INC_formats) -Irepack
INC_convert  := $(INC_repack) -Iconvert
INC_runtime  := $(INC_contract) -Ikernels -Iruntime -I$(CUDA_HOME)/include
# tests, benchmarks and fuzz targets reach every layer
INC_all      := $(INC_convert) -Ikernels -Iruntime -I$(CUDA_HOME)/include
# the include paths of a source file: its top folder's (generated sources are the runtime's)
incs_of   = $(or $(INC_$(firstword $(subst /, ,$(patsubst $(BUILD)/gen/%,runtime/%,$(1))))),$(INC_all))
BASEFLAGS = -std=c11 -D_GNU_SOURCE -g $(WARN) -fPIC -fopenmp $(DEPINCS)
# library code exports only what include/*.h declares (HC_API); everything else is hidden
LIBFLAGS  = -fvisibility=hidden
CFLAGS   ?= -O2
SANFLAGS := -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# HC_DEPS=folder: headers and libraries carried to a machine that cannot install packages
# (the lent GPU machine: see bench/NOTES.md); include/ and lib/ inside it are used first
HC_DEPS  ?=
ifneq ($(HC_DEPS),)
DEPINCS  := -I$(HC_DEPS)/include
LDEXTRA  := -L$(HC_DEPS)/lib -Wl,-rpath,$(abspath $(HC_DEPS))/lib
endif
LIBS     := $(LDEXTRA) -lzstd -lcjson -larchive -lxxhash -lm -ldl

KERNELS  := $(wildcard kernels/*.cu kernels/*/*.cuh kernels/*.h) contract/layout_core.h
RT_SRC   := $(wildcard base/*.c contract/*.c runtime/*.c) $(BUILD)/gen/kernel_sources.c
CV_SRC   := $(wildcard formats/*.c) $(wildcard repack/*.c) \
            $(filter-out convert/main.c,$(wildcard convert/*.c))
CLI_SRC  := convert/main.c
TEST_SRC := $(wildcard tests/*.c)
BENCH_SRC:= $(wildcard bench/*.c)

# $(1) = object dir, $(2) = extra flags
objs = $(patsubst %.c,$(1)/%.o,$(2))

RT_OBJ   := $(call objs,$(BUILD)/obj,$(RT_SRC))
CV_OBJ   := $(call objs,$(BUILD)/obj,$(CV_SRC))
CLI_OBJ  := $(call objs,$(BUILD)/obj,$(CLI_SRC))
TEST_OBJ := $(call objs,$(BUILD)/obj,$(TEST_SRC))
SRT_OBJ  := $(call objs,$(BUILD)/san,$(RT_SRC))
SCV_OBJ  := $(call objs,$(BUILD)/san,$(CV_SRC))
SCLI_OBJ := $(call objs,$(BUILD)/san,$(CLI_SRC))
STEST_OBJ:= $(call objs,$(BUILD)/san,$(TEST_SRC))

DEPS_OK  := $(BUILD)/.deps-ok

.PHONY: all deps test demo install clean bench fixtures fuzz fuzz-bins gpu-test bench-gpu bench-moe
all: $(BUILD)/hconvert $(BUILD)/libhcrt.a $(BUILD)/libhcrt.so $(BUILD)/libhconvert.a \
     $(BUILD)/libhconvert.so

$(DEPS_OK): .ci/install-deps.sh
	@mkdir -p $(BUILD)
	@if [ -z "$(HC_DEPS)" ]; then ./.ci/install-deps.sh; fi
	@touch $@
deps: $(DEPS_OK)

# the kernel sources, built into the runtime library as strings (NVRTC compiles them at run time)
$(BUILD)/gen/kernel_sources.c: $(KERNELS) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* generated from kernels/ and contract/layout_core.h by the Makefile */'; \
	  echo '#include "jit.h"'; \
	  i=0; for f in $(KERNELS); do \
	    echo "static const char src_$$i[] = {"; \
	    od -An -v -tx1 $$f | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	    echo "0};"; i=$$((i+1)); done; \
	  echo 'const hc_kernel_source hc__kernel_sources[] = {'; \
	  i=0; for f in $(KERNELS); do echo "{\"$$(echo $$f | sed 's,^kernels/,,; s,^contract/,,')\", src_$$i},"; \
	    i=$$((i+1)); done; \
	  echo '{0, 0}};'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(LIBFLAGS) $(INC_runtime) $(CFLAGS) -c $< -o $@
$(BUILD)/san/$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(LIBFLAGS) $(INC_runtime) $(SANFLAGS) -c $< -o $@

# library objects (hidden by default) and test objects, each with its folder's include paths
$(BUILD)/obj/tests/%.o: tests/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(INC_all) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/san/tests/%.o: tests/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(INC_all) $(SANFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(LIBFLAGS) $(call incs_of,$<) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/san/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(LIBFLAGS) $(call incs_of,$<) $(SANFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libhcrt.a: $(RT_OBJ)
	ar rcs $@ $^
$(BUILD)/libhconvert.a: $(CV_OBJ)
	ar rcs $@ $^
$(BUILD)/libhcrt.so: $(RT_OBJ)
	$(CC) -shared -fopenmp -o $@ $^ -Wl,-soname,libhcrt.so.0 $(LDEXTRA) -lzstd -lcjson -lxxhash -lm -ldl
$(BUILD)/libhconvert.so: $(CV_OBJ) $(RT_OBJ)
	$(CC) -shared -fopenmp -o $@ $^ -Wl,-soname,libhconvert.so.0 $(LIBS)

$(BUILD)/hconvert: $(CLI_OBJ) $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a
	$(CC) -fopenmp -o $@ $(CLI_OBJ) $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS)
$(BUILD)/san/hconvert: $(SCLI_OBJ) $(SCV_OBJ) $(SRT_OBJ)
	$(CC) -fopenmp $(SANFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/test_unit: $(TEST_OBJ) $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a
	$(CC) -fopenmp -o $@ $(TEST_OBJ) $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS)
$(BUILD)/san/test_unit: $(STEST_OBJ) $(SCV_OBJ) $(SRT_OBJ)
	$(CC) -fopenmp $(SANFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(INC_all) -O2 -o $@ $< $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS)

# libFuzzer targets (tests/fuzz/README.md), one per input parser, built with clang into
# $(BUILD)/fuzz with ASan+UBSan. The library objects are built without -Werror: clang warns
# where gcc does not, and a clang-only warning must not stop `make test` (the gcc builds hold
# -Werror); the fuzz targets themselves keep it.
FUZZ_CC    ?= clang
FUZZ_DIR   := $(BUILD)/fuzz
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(INC_all) $(DEPINCS) -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
              -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_LIB   := $(wildcard base/*.c contract/*.c) runtime/container.c runtime/tile_layer.c \
              $(wildcard formats/*.c) convert/npy.c convert/atomic.c
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))
# `make test` builds them, except where install-deps does not run (HC_DEPS) and clang with
# libFuzzer is absent: there the stage says so and skips (tests/fuzz/run.sh)
FUZZ_PROBE  = printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' \
              | $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null
FUZZ_FOR_TEST = $(if $(HC_DEPS),$(shell $(FUZZ_PROBE) && echo fuzz-bins),fuzz-bins)

test: all $(BUILD)/test_unit $(BUILD)/san/test_unit $(BUILD)/san/hconvert $(BUILD)/gpu_test \
      $(BUILD)/gpu_moe_test $(FUZZ_FOR_TEST)
	@HC_DEPS='$(HC_DEPS)' sh tests/run.sh $(BUILD)

# GPU tests: on a machine without a GPU they say so and pass
$(BUILD)/gpu_test: tests/gpu/gpu_test.c tests/gpu/tile_synth.h $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a
	$(CC) $(BASEFLAGS) $(INC_all) -O2 -o $@ $< $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS)
$(BUILD)/gpu_moe_test: tests/gpu/moe_test.c tests/gpu/tile_synth.h $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a
	$(CC) $(BASEFLAGS) $(INC_all) -O2 -o $@ $< $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS)
gpu-test: $(BUILD)/gpu_test $(BUILD)/gpu_moe_test
	@$(BUILD)/gpu_test && $(BUILD)/gpu_moe_test
# the GPU benchmark links cuBLASLt and the CUDA runtime directly (its peer; the library does not)
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcudart
$(BUILD)/bench/gpu_bench: bench/gpu_bench.c bench/gpu_bench_modes.c bench/gpu_bench.h bench/gpu_benchutil.h tests/gpu/tile_synth.h $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(INC_all) -Wno-strict-prototypes -Itests/gpu -O2 $(CFLAGS) -o $@ bench/gpu_bench.c bench/gpu_bench_modes.c $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS) $(CUDA_LIBS)
bench-gpu: $(BUILD)/bench/gpu_bench
	@$(BUILD)/bench/gpu_bench
$(BUILD)/bench/moe_bench: bench/moe_bench.c bench/gpu_benchutil.h tests/gpu/moe_synth.h tests/gpu/tile_synth.h $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(INC_all) -Wno-strict-prototypes -Itests/gpu -O2 $(CFLAGS) -o $@ $< $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS) $(CUDA_LIBS)
$(BUILD)/bench/kernel_cache: bench/kernel_cache.c tests/gpu/moe_synth.h tests/gpu/tile_synth.h $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(INC_all) -Wno-strict-prototypes -Itests/gpu -O2 $(CFLAGS) -o $@ $< $(BUILD)/libhconvert.a $(BUILD)/libhcrt.a $(LIBS) $(CUDA_LIBS)
bench-moe: $(BUILD)/bench/moe_bench
	@$(BUILD)/bench/moe_bench

demo: $(BUILD)/hconvert
	@sh tests/demo.sh $(BUILD)/hconvert

# (not kernel_text.c: bench/kernel_text.sh builds it against two trees, with its own -D)
bench: $(patsubst bench/%.c,$(BUILD)/bench/%,$(filter-out bench/gpu_bench.c bench/gpu_bench_modes.c bench/kernel_text.c,$(BENCH_SRC))) $(BUILD)/hconvert
	@sh bench/run.sh $(BUILD)

$(FUZZ_DIR)/obj/tests/fuzz/%.o: tests/fuzz/%.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Wall -Wextra -Werror -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_DIR)/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Wall -Wextra -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_DIR)/libfuzzlib.a: $(call objs,$(FUZZ_DIR)/obj,$(FUZZ_LIB))
	@rm -f $@
	ar rcs $@ $^
$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/libfuzzlib.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)
fuzz-bins: $(FUZZ_BINS)
# the targets' objects are intermediates of a pattern chain: keep them (no rebuild next time)
.SECONDARY: $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/obj/tests/fuzz/%.o,$(wildcard tests/fuzz/fuzz_*.c))
# `make fuzz`: every target for FUZZ_SECONDS (default 60) each, after the regression inputs
fuzz: fuzz-bins
	@sh tests/fuzz/run.sh $(BUILD) $(or $(FUZZ_SECONDS),60)

fixtures:
	python3 tests/fixtures/gen_fixtures.py
	python3 tests/fixtures/gen_quant.py

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BUILD)/hconvert $(DESTDIR)$(PREFIX)/bin/hconvert
	install -m 644 include/hconvert.h include/hcrt.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libhcrt.a $(BUILD)/libhconvert.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libhcrt.so $(DESTDIR)$(PREFIX)/lib/libhcrt.so.$(VERSION)
	install -m 755 $(BUILD)/libhconvert.so $(DESTDIR)$(PREFIX)/lib/libhconvert.so.$(VERSION)
	ln -sf libhcrt.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libhcrt.so.0
	ln -sf libhcrt.so.0 $(DESTDIR)$(PREFIX)/lib/libhcrt.so
	ln -sf libhconvert.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libhconvert.so.0
	ln -sf libhconvert.so.0 $(DESTDIR)$(PREFIX)/lib/libhconvert.so
	for pc in hcrt hconvert; do \
	  sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' include/$$pc.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$pc.pc; done

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
