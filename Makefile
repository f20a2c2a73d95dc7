# gradient.h: plain Make. `make demo` runs the demo, `make test` runs every test.
CC      ?= cc
CXX     ?= c++
CLANG   ?= clang
CLANGXX ?= clang++
WARN    = -Wall -Wextra -Wpedantic -Wshadow -Werror
CSTD    = -std=c11
OPT     ?= -O2
B       = build

# amalgamation order: the top comment and the public part; then the implementation, opened by
# src/hooks.c, the op tables behind it
PARTS = src/head.h src/api.h src/hooks.c ops/table.h \
        src/impl.c src/base.c src/graph.c src/rewrite.h \
        ops/vmath.c ops/elemwise.c ops/reduce.c ops/shape.c ops/gemm.c ops/dot.c ops/linalg.c ops/nnet.c ops/gradops.c ops/index.c ops/batch.c ops/scan.c ops/ifelse.c ops/graphop.c \
        src/grad.c src/rop.c src/jacobian.c src/signature.c src/simplify.c src/merge.c src/rewrite.c src/fuse.c \
        src/function.c src/call.c src/numeric.c src/print.c src/emit.c src/tail.c

# The packer: the parts in order, each after a banner naming its file. ops/table.h is read first
# for its elementwise rows (GR_ELEMWISE_OPS): src/api.h's line "/* GR_ELEMWISE_OPS: ... */" becomes
# one written prototype per row, with the row's math comment (ew_proto).
PACK  = awk 'function kflush(   i, l) { \
            if (kname == "") return; \
            printf "static const char *const gr__kernel_%s[] GR__UNUSED = {\n", kname; \
            for (i = 1; i <= nl; i++) { l = kl[i]; gsub(/\\/, "\\\\\\\\", l); gsub(/"/, "\\\"", l); printf "    \"%s\\n\",\n", l } \
            print "    NULL\n};"; kn[++nk] = kname; kname = ""; nl = 0; \
            kg[nk] = ""; kc[nk] = 0; \
            for (i = 1; i <= nif; i++) if (ifs[i] ~ /GR_NO_/) { kg[nk] = kg[nk] ifs[i] "\n"; kc[nk]++ } } \
        function neg(l) { if (l ~ /^\#ifndef /) { sub(/^\#ifndef /, "\#ifdef ", l); return l } \
            if (l ~ /^\#ifdef /) { sub(/^\#ifdef /, "\#ifndef ", l); return l } sub(/^\#if /, "\#if !", l); return l } \
        function ew_proto(n, a, c,   p) { \
            p = a == 1 ? "x" : a == 2 ? "a, b" : "a, b, c"; \
            if (match(c, /^\([a-z, ]*\): /)) { p = substr(c, 2, RLENGTH - 4); c = substr(c, RLENGTH + 1) } \
            gsub(/[a-z]+/, "gr_var *&", p); \
            protos = protos sprintf("%-62s /* %s */\n", "GR_API gr_var *gr_" n "(" p ");", c) } \
        FNR == 1 { part++ } \
        part == 1 && /^\#define GR_ELEMWISE_OPS/ { rows = 1; next } \
        part == 1 && rows && !/\\$$/ { rows = 0 } \
        part == 1 && rows && /^ *X\(/ { split(substr($$0, index($$0, "X(") + 2), f, ","); name = f[1]; arity = f[2] + 0; open = 1 } \
        part == 1 && rows && /\/\*.*\*\/ *\\$$/ { c = $$0; sub(/ *\*\/ *\\$$/, "", c); sub(/.*\/\* /, "", c); \
            if (open) { ew_proto(name, arity, c); open = 0 } else if (c !~ /^\(/) protos = protos "/* " c " */\n" } \
        part == 1 { next } \
        FNR == 1 || /^\/\* GR_KERNEL(_END| [A-Za-z_0-9]+) \*\/$$/ { kflush() } \
        FNR == 1 && part > 2 { print ""; print "/* ==== " FILENAME ": generated region; edit " FILENAME ", then run make gradient.h ==== */" } \
        /^\/\* GR_ELEMWISE_OPS: / { print; printf "%s", protos; next } \
        /^\/\* GR_KERNEL [A-Za-z_0-9]+ \*\/$$/ { print; kname = $$3; next } \
        /^\/\* GR_KERNEL_END \*\/$$/ { print; next } \
        /^\/\* GR_KERNEL_TABLE \*\/$$/ { print "static const gr__kernel_text gr__kernel_texts[] GR__UNUSED = {"; \
            for (i = 1; i <= nk; i++) { printf "%s", kg[i]; printf "    { \"%s\", gr__kernel_%s },\n", kn[i], kn[i]; \
                for (j = 0; j < kc[i]; j++) print "\#endif" } print "    { NULL, NULL }\n};"; next } \
        part > 1 && /^\#if/ { ifs[++nif] = $$0; sub(/[ \t]*[/][*].*$$/, "", ifs[nif]) } \
        part > 1 && /^\#else/ { ifs[nif] = neg(ifs[nif]) } \
        part > 1 && /^\#endif/ { nif-- } \
        kname != "" { kl[++nl] = $$0 } \
        { print }' ops/table.h

# the test binary: the runner's main, the op tests by row (tests/ops.c expands the op tables; each
# family's cases are in tests/ops_<family>.c), their helpers, and the drivers' suites (tests/t_*.c)
OPS_SRC  = $(sort $(wildcard tests/ops_*.c))
TEST_SRC = $(sort $(wildcard tests/t_*.c))
TEST_ALL = tests/main.c tests/ops.c tests/forward.c tests/deriv.c $(OPS_SRC) $(TEST_SRC)

.PHONY: check-api-index all bench bench-emit bench-peers demo test test-emit test-examples test-embedded test-portable check-header test-gcc test-dot install uninstall test-install test-clang test-cxx test-link test-san test-cblas test-api test-docs test-alloc test-fuzz-replay test-small fuzz clean examples

all: gradient.h

gradient.h: $(PARTS) Makefile
	@$(PACK) $(PARTS) > $@.tmp && mv $@.tmp $@ && echo "packed gradient.h"

check-header: | $(B)
	@$(PACK) $(PARTS) > $(B)/gradient.h.check
	@cmp -s $(B)/gradient.h.check gradient.h || { echo "gradient.h differs from src/ and ops/: run make gradient.h"; exit 1; }
	@awk '/^MIT License$$/ { on = 1 } on && /^\*\/$$/ { exit } on' gradient.h | cmp -s - LICENSE || \
	    { echo "LICENSE differs from the licence at the end of gradient.h (src/tail.c)"; exit 1; }
	@echo "check-header: gradient.h matches src/ and ops/; LICENSE matches its licence"

$(B):
	@mkdir -p $(B)

demo: gradient.h | $(B)
	$(CC) $(CSTD) $(OPT) $(WARN) -o $(B)/demo examples/demo.c -lm
	./$(B)/demo

# ---- tests -------------------------------------------------------------------------------------

# every SUITE(suite_x) of tests/ops_*.c and tests/t_*.c, for tests/main.c
# (regenerated every time, replaced only when it changes: a removed test file must leave the list)
$(B)/suites.h: FORCE | $(B)
	@{ printf '#define GT_SUITES(X)'; for s in $$(grep -ho 'SUITE(suite_[A-Za-z0-9_]*)' $(OPS_SRC) $(TEST_SRC) | sed 's/SUITE(\(.*\))/\1/'); do printf ' X(%s)' $$s; done; echo; } > $@.tmp
	@cmp -s $@.tmp $@ 2>/dev/null && rm -f $@.tmp || mv $@.tmp $@
FORCE:

TCFLAGS = -I$(B)
$(B)/test-gcc: gradient.h $(TEST_ALL) $(wildcard tests/*.h) $(B)/suites.h | $(B)
	$(CC) $(CSTD) $(OPT) $(WARN) $(TCFLAGS) -o $@ $(TEST_ALL) -lm

# the DOT files the printing tests write (tests/t_print.c) go to $(B)/dot, where test-dot runs
# Graphviz's dot on each
test-gcc: $(B)/test-gcc
	@rm -rf $(B)/dot && mkdir -p $(B)/dot
	GT_DOT_DIR=$(B)/dot ./$(B)/test-gcc

test-dot:
	@ls $(B)/dot/*.dot > /dev/null 2>&1 || { echo "test-dot: no DOT files in $(B)/dot: run make test-gcc first"; exit 1; }
	@if command -v dot > /dev/null 2>&1; then \
	    n=0; for f in $(B)/dot/*.dot; do dot -Tsvg "$$f" -o "$${f%.dot}.svg" || { echo "dot rejects $$f"; exit 1; }; n=$$((n + 1)); done; \
	    echo "dot: $$n passed, 0 failed (every DOT file of the tests accepted by dot -Tsvg)"; \
	else echo "test-dot: skipped: Graphviz's dot is not installed (apt-get install graphviz)"; fi

# clang builds for this machine's widest vectors (AVX-512/AVX GEMM kernels; no FMA contraction, so
# that plain-C reference loops in the tests round alike); the sanitizer build
# takes the portable, extension-free GEMM (GR_NO_VECTOR_EXTENSIONS); test-gcc the SSE2/NEON one
test-clang: gradient.h $(B)/suites.h | $(B)
	$(CLANG) $(CSTD) $(OPT) -march=native -ffp-contract=off $(WARN) $(TCFLAGS) -o $(B)/test-clang $(TEST_ALL) -lm
	./$(B)/test-clang

# the whole header, implementation included, as C++ (g++ and clang++)
test-cxx: gradient.h | $(B)
	$(CXX) -std=c++11 $(OPT) $(WARN) -o $(B)/test-cxx tests/cxx.cpp -lm
	./$(B)/test-cxx
	$(CLANGXX) -std=c++11 $(OPT) $(WARN) -o $(B)/test-clangxx tests/cxx.cpp -lm
	./$(B)/test-clangxx

# two translation units, the implementation in one; then GRADIENT_STATIC in both
test-link: gradient.h | $(B)
	$(CC) $(CSTD) $(WARN) -o $(B)/link tests/link_a.c tests/link_b.c -lm
	./$(B)/link
	$(CC) $(CSTD) $(WARN) -DLINK_STATIC -o $(B)/link-static tests/link_a.c tests/link_b.c -lm
	./$(B)/link-static

test-san: gradient.h $(B)/suites.h | $(B)
	$(CC) $(CSTD) -O1 -g -DGR_NO_VECTOR_EXTENSIONS $(WARN) $(TCFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	    -o $(B)/test-san $(TEST_ALL) -lm
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./$(B)/test-san

test-cblas: gradient.h $(B)/suites.h | $(B)
	$(CC) $(CSTD) $(OPT) $(WARN) $(TCFLAGS) -DGRADIENT_CBLAS \
	    -o $(B)/test-cblas $(TEST_ALL) -lopenblas -lm
	OPENBLAS_NUM_THREADS=1 ./$(B)/test-cblas

# a program written only against the API contract's minimum (tests/api_contract.c: its prototypes); then the docs
test-api: gradient.h | $(B)
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -o $(B)/api-contract tests/api_contract.c -lm
	$(CXX) -x c++ -std=c++11 -Wall -Wextra -Werror -o $(B)/api-contract-cxx tests/api_contract.c -lm
	@echo "api contract: $$(grep -c '^[a-z].*(.*);$$' tests/api_contract.c) prototypes of API.md match gradient.h"
	$(CC) -std=c11 -Wall -Wextra -Wpedantic -Werror -o $(B)/api-min tests/api_min.c -lm
	./$(B)/api-min
	@$(MAKE) --no-print-directory test-docs

# Every ```c block of README.md must compile (one with main() is built and run); the first one is
# examples/first_derivative.c (including "gradient.h" where the example includes "../gradient.h"),
# the second tests/readme_quickstart.c, byte for byte, and their outputs are README.md's first two
# ```text blocks. The EXAMPLE in src/head.h (the top of gradient.h) is built and run as the body of
# a main(). Then the API index (docs/API.md) is checked against the header (check-api-index).
DOCS = $(B)/docs
test-docs: gradient.h | $(B)
	@rm -rf $(DOCS) && mkdir -p $(DOCS)
	@awk -v dir=$(DOCS) '/^```c$$/ { n++; f = dir "/readme" n ".c"; printf "" > f; inc = 1; next } \
	    /^```text$$/ { t++; f = dir "/readme" t ".txt"; printf "" > f; intext = 1; next } \
	    /^```/ { if (inc || intext) close(f); inc = intext = 0; next } \
	    inc || intext { print > f }' README.md
	@sed 's|"../gradient.h"|"gradient.h"|' examples/first_derivative.c | cmp -s - $(DOCS)/readme1.c || \
	    { echo "README.md's first example differs from examples/first_derivative.c"; exit 1; }
	@cmp -s $(DOCS)/readme2.c tests/readme_quickstart.c || \
	    { echo "README.md's quick start differs from tests/readme_quickstart.c"; exit 1; }
	@set -e; for f in $(DOCS)/readme*.c; do \
	    if grep -q 'int main' $$f; then \
	        $(CC) $(CSTD) $(WARN) -I. -o $${f%.c} $$f -lm; ./$${f%.c} > $${f%.c}.out; \
	    else $(CC) $(CSTD) $(WARN) -I. -c -o $${f%.c}.o $$f; fi; \
	done
	@cmp -s $(DOCS)/readme1.out $(DOCS)/readme1.txt || \
	    { echo "the output of the first example differs from README.md:"; diff $(DOCS)/readme1.txt $(DOCS)/readme1.out; exit 1; }
	@cmp -s $(DOCS)/readme2.out $(DOCS)/readme2.txt || \
	    { echo "the output of the quick start differs from README.md:"; diff $(DOCS)/readme2.txt $(DOCS)/readme2.out; exit 1; }
	@$(CXX) -x c++ -std=c++11 $(WARN) -I. -o $(DOCS)/quickstart-cxx tests/readme_quickstart.c -lm
	@./$(DOCS)/quickstart-cxx > $(DOCS)/quickstart-cxx.out && cmp -s $(DOCS)/quickstart-cxx.out $(DOCS)/readme2.out
	@{ echo '#include <stdio.h>'; echo '#define GRADIENT_IMPLEMENTATION'; echo '#include "gradient.h"'; \
	   echo 'int main(void) {'; awk '/^   EXAMPLE$$/ { on = 1; next } on && /^$$/ { exit } on { print substr($$0, 6) }' src/head.h; \
	   echo 'return 0; }'; } > $(DOCS)/head_example.c
	@$(CC) $(CSTD) $(WARN) -I. -o $(DOCS)/head_example $(DOCS)/head_example.c -lm && ./$(DOCS)/head_example > /dev/null
	@$(MAKE) --no-print-directory check-api-index
	@echo "docs: $$(( $$(ls $(DOCS)/readme*.c | wc -l) + 4 )) passed, 0 failed"

# docs/API.md lists every GR_API function of the header's public part, and only those, and its
# declarations compile after the header (a changed signature is a conflicting declaration)
check-api-index: gradient.h | $(B)
	@sed -n '1,/^#endif \/\* GRADIENT_H \*\//p' gradient.h | grep -o 'GR_API[^(;]*(' | sed 's/.*[ *]\([A-Za-z_0-9]*\)($$/\1/' | sort > $(B)/api-header.txt
	@awk '/^```c$$/ { on = 1; next } /^```/ { on = 0 } on' docs/API.md > $(B)/api-index.body
	@sed -n 's/^[^(]*[ *]\([A-Za-z_0-9]*\)(.*/\1/p' $(B)/api-index.body | sort > $(B)/api-index.txt
	@test -z "$$(uniq -d $(B)/api-index.txt)" || { echo "docs/API.md lists twice: $$(uniq -d $(B)/api-index.txt)"; exit 1; }
	@cmp -s $(B)/api-header.txt $(B)/api-index.txt || { echo "docs/API.md and the header's GR_API functions differ (< header only, > docs/API.md only):"; \
	    diff $(B)/api-header.txt $(B)/api-index.txt | grep '^[<>]'; exit 1; }
	@{ echo '#include "gradient.h"'; cat $(B)/api-index.body; } > $(B)/api-index.c
	@$(CC) $(CSTD) $(WARN) -I. -c -o $(B)/api-index.o $(B)/api-index.c
	@echo "api index: the $$(wc -l < $(B)/api-index.txt) functions of docs/API.md are the header's, with its signatures"

# every example builds warning-free as a single file and runs successfully
EXAMPLES = $(sort $(wildcard examples/*.c))
test-examples: gradient.h | $(B)
	@for e in $(EXAMPLES); do n=$$(basename $$e .c); \
	  $(CC) $(CSTD) $(OPT) $(WARN) -o $(B)/ex-$$n $$e -lm || exit 1; \
	  ./$(B)/ex-$$n > $(B)/ex-$$n.out || { echo "example $$n failed"; cat $(B)/ex-$$n.out; exit 1; }; \
	  echo "example $$n: ok"; done
	@$(MAKE) --no-print-directory test-embedded

# C99 and tcc: every example compiles as C99 (-std=c99 -Wpedantic -Werror), and the quick start
# built as C99 prints README.md's output; with tcc installed, every example built by tcc runs
# successfully and the quick start prints the same output
test-portable: gradient.h | $(B)
	@for e in tests/readme_quickstart.c $(EXAMPLES); do $(CC) -std=c99 $(WARN) -I. -fsyntax-only $$e || exit 1; done
	@$(CC) -std=c99 $(WARN) -I. -o $(B)/quickstart-c99 tests/readme_quickstart.c -lm && ./$(B)/quickstart-c99 > $(B)/quickstart-c99.out
	@$(CC) $(CSTD) $(WARN) -O3 -I. -c -o $(B)/quickstart-O3.o tests/readme_quickstart.c || \
	    { echo "the implementation warns at -O3 (-Wall -Wextra -Werror)"; exit 1; }
	@awk '/^```text$$/ { n++; next } n == 2 && /^```/ { exit } n == 2' README.md | cmp -s - $(B)/quickstart-c99.out || \
	    { echo "the quick start built as C99 does not print README.md's output"; exit 1; }
	@n=$$(( $$(echo $(EXAMPLES) | wc -w) + 2 )); \
	if command -v tcc > /dev/null 2>&1; then \
	    tcc -I. -o $(B)/quickstart-tcc tests/readme_quickstart.c -lm && ./$(B)/quickstart-tcc | cmp -s - $(B)/quickstart-c99.out || \
	        { echo "the quick start built by tcc does not print README.md's output"; exit 1; }; \
	    for e in $(EXAMPLES); do x=$(B)/tcc-$$(basename $$e .c); \
	        tcc -o $$x $$e -lm && ./$$x > $$x.out || { echo "tcc: $$e failed"; cat $$x.out; exit 1; }; done; \
	    n=$$(( n + $$(echo $(EXAMPLES) | wc -w) + 1 )); \
	else echo "test-portable: tcc is not installed: the tcc builds are skipped (apt-get install tcc)"; fi; \
	echo "portable: $$n passed, 0 failed (C99: the quick start and every example; tcc: the same, run)"

# a counting allocator: no allocation in a steady-state gr_call, nothing left after freeing, and
# every allocation made to fail in turn (built plain, then with ASan/UBSan for the failure paths);
# alloc_ops does the last for every row of the op table, with integer and bool operands too (its
# sanitizer build with clang, whose UBSan also reports arithmetic on NULL pointers); alloc_linalg
# for a function of the linear algebra, its gradients, a Jacobian and an R-op
ALLOC_SAN = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
test-alloc: gradient.h | $(B)
	$(CC) $(CSTD) $(OPT) $(WARN) -o $(B)/alloc-count tests/alloc_count.c -lm
	./$(B)/alloc-count
	$(CC) $(CSTD) $(ALLOC_SAN) $(WARN) -o $(B)/alloc-count-san tests/alloc_count.c -lm
	ASAN_OPTIONS=detect_leaks=1 ./$(B)/alloc-count-san
	$(CC) $(CSTD) $(OPT) $(WARN) -o $(B)/alloc-ops tests/alloc_ops.c -lm
	./$(B)/alloc-ops
	$(CLANG) $(CSTD) $(ALLOC_SAN) $(WARN) -o $(B)/alloc-ops-san tests/alloc_ops.c -lm
	ASAN_OPTIONS=detect_leaks=1 ./$(B)/alloc-ops-san
	$(CC) $(CSTD) $(OPT) $(WARN) -o $(B)/alloc-linalg tests/alloc_linalg.c -lm
	./$(B)/alloc-linalg

# the fuzz target (tests/fuzz/fuzz_graph.c): `make fuzz` builds it with libFuzzer into build/fuzz-graph
# (README.md, "Fuzzing", says how to run it); test-fuzz-replay feeds it the committed seed corpus
# without libFuzzer, under ASan/UBSan (at -O0: the build takes most of its time)
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz: gradient.h | $(B)
	$(CLANG) $(CSTD) -g -O1 $(WARN) -fsanitize=fuzzer $(FUZZ_SAN) -o $(B)/fuzz-graph tests/fuzz/fuzz_graph.c -lm
	@echo "built $(B)/fuzz-graph: ./$(B)/fuzz-graph -max_total_time=600 $(B)/fuzz-corpus tests/fuzz/corpus"

test-fuzz-replay: gradient.h | $(B)
	$(CC) $(CSTD) -g -O0 $(WARN) -DFZ_REPLAY $(FUZZ_SAN) -o $(B)/fuzz-replay tests/fuzz/fuzz_graph.c tests/fuzz/replay.c -lm
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./$(B)/fuzz-replay tests/fuzz/corpus

# ---- installing ----------------------------------------------------------------------------------

# make install PREFIX=... [DESTDIR=...]: include/gradient.h, lib/pkgconfig/gradient.pc and the CMake
# package lib/cmake/gradient/gradientConfig.cmake (+ its version file), from the templates in pkg/;
# both find the prefix from where they are, so the installed tree can move
PREFIX  ?= /usr/local
VERSION  = $(shell sed -n 's/^\#define GRADIENT_VERSION_STRING "\(.*\)"/\1/p' src/api.h)
VSUBST   = sed -e 's|@VERSION@|$(VERSION)|g' \
               -e 's|@VERSION_MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|g' -e 's|@VERSION_MINOR@|$(word 2,$(subst ., ,$(VERSION)))|g'
install: gradient.h
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/lib/cmake/gradient
	install -m 644 gradient.h $(DESTDIR)$(PREFIX)/include/gradient.h
	$(VSUBST) pkg/gradient.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gradient.pc
	install -m 644 pkg/gradientConfig.cmake $(DESTDIR)$(PREFIX)/lib/cmake/gradient/gradientConfig.cmake
	$(VSUBST) pkg/gradientConfigVersion.cmake.in > $(DESTDIR)$(PREFIX)/lib/cmake/gradient/gradientConfigVersion.cmake

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/gradient.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/gradient.pc
	rm -rf $(DESTDIR)$(PREFIX)/lib/cmake/gradient

# installs into a temporary prefix and builds tests/install/consumer.c against it through
# pkg-config; with cmake, also through find_package(gradient), add_subdirectory and FetchContent
# (the repository itself, nothing downloaded), and CMake's own install checked against make's
INST = $(CURDIR)/$(B)/install
test-install: gradient.h | $(B)
	@rm -rf $(INST) $(B)/consumer-* && $(MAKE) --no-print-directory install PREFIX=$(INST) > /dev/null
	@test "$$(sed -n 's/^\/\* gradient.h v\([0-9.]*\) .*/\1/p' src/head.h)" = "$(VERSION)" || \
	    { echo "src/head.h's first line does not say v$(VERSION)"; exit 1; }
	@n=0; \
	if command -v pkg-config > /dev/null 2>&1; then \
	    PKG_CONFIG_PATH=$(INST)/lib/pkgconfig; export PKG_CONFIG_PATH; \
	    test "$$(pkg-config --modversion gradient)" = "$(VERSION)" || { echo "pkg-config: wrong version"; exit 1; }; \
	    $(CC) $(CSTD) $(WARN) $$(pkg-config --cflags gradient) -o $(B)/consumer-pc tests/install/consumer.c $$(pkg-config --libs gradient) && \
	    ./$(B)/consumer-pc || exit 1; n=$$((n + 1)); \
	else echo "test-install: pkg-config is not installed: the pkg-config consumer is skipped"; fi; \
	if command -v cmake > /dev/null 2>&1; then \
	    for use in find_package add_subdirectory FetchContent; do \
	        cmake -S tests/install -B $(B)/consumer-$$use -DGRADIENT_USE=$$use -DCMAKE_PREFIX_PATH=$(INST) \
	            -DGRADIENT_SOURCE=$(CURDIR) -DFETCHCONTENT_SOURCE_DIR_GRADIENT=$(CURDIR) \
	            -DCMAKE_C_FLAGS="$(WARN)" > $(B)/consumer-$$use.log 2>&1 && \
	        cmake --build $(B)/consumer-$$use >> $(B)/consumer-$$use.log 2>&1 && \
	        ./$(B)/consumer-$$use/consumer || { echo "CMake consumer ($$use) failed:"; cat $(B)/consumer-$$use.log; exit 1; }; \
	        n=$$((n + 1)); \
	    done; \
	    cmake -S . -B $(B)/consumer-cmake-install > $(B)/consumer-cmake-install.log 2>&1 && \
	    cmake --install $(B)/consumer-cmake-install --prefix $(B)/consumer-cmake-prefix >> $(B)/consumer-cmake-install.log 2>&1 || \
	        { cat $(B)/consumer-cmake-install.log; exit 1; }; \
	    for f in include/gradient.h lib/pkgconfig/gradient.pc lib/cmake/gradient/gradientConfig.cmake lib/cmake/gradient/gradientConfigVersion.cmake; do \
	        cmp -s $(INST)/$$f $(B)/consumer-cmake-prefix/$$f || { echo "cmake --install and make install differ: $$f"; exit 1; }; done; \
	    n=$$((n + 1)); \
	else echo "test-install: cmake is not installed: the CMake consumers are skipped"; fi; \
	echo "install: $$n passed, 0 failed (make install into $(B)/install; consumers through pkg-config and CMake)"

# gr_fn_emit_c row by row (tests/t_emit.c): the test binary run with GT_EMIT_OUT writes every row's
# values cases, each emitted as C with its inputs and gr_call's outputs, into one file,
# $(B)/emit/cases.c, built as C99 with -Wall -Wextra -Werror and run (every case against gr_call,
# bit for bit, and again with an output given an input's memory); make bench's generator
# (bench/emitgen.c) runs and its files compile with bench/bench.c (-DBENCH_EMIT, not run); the
# single emitted files ($(B)/emit/{sample,w2,grad,w1,w4,loop,ctl,vm}.c: loop.c a recurrent network's
# cost and BPTT gradient, a C for over the steps; vm.c fused groups calling ops/vmath.c's map
# kernels block by block, GCC vector extensions under __GNUC__) compile with -Wpedantic and
# -ffreestanding and reference no allocator (nm), and, when arm-none-eabi-gcc is installed (CI
# installs it), build for a Cortex-M4
EMIT_CC    = $(CC) -std=c99 -Wall -Wextra -Werror
EMIT_FILES = sample w2 grad w1 w4 loop ctl vm
test-emit: $(B)/test-gcc
	@rm -rf $(B)/emit && mkdir -p $(B)/emit
	GT_EMIT_OUT=$(B)/emit ./$(B)/test-gcc
	$(EMIT_CC) -O0 -o $(B)/emit/cases $(B)/emit/cases.c -lm
	./$(B)/emit/cases
	@for f in $(EMIT_FILES); do \
	    $(EMIT_CC) -Wpedantic -O2 -c -o $(B)/emit/$$f.o $(B)/emit/$$f.c && \
	    $(EMIT_CC) -Wpedantic -O2 -ffreestanding -c -o $(B)/emit/$$f-fs.o $(B)/emit/$$f.c || exit 1; \
	    if nm $(B)/emit/$$f.o $(B)/emit/$$f-fs.o | grep -E ' U _?(malloc|calloc|realloc|free|aligned_alloc|posix_memalign)$$'; then \
	        echo "$(B)/emit/$$f.c references an allocator"; exit 1; fi; \
	done; echo "emit: $(EMIT_FILES:%=%.c) compile as C99 (-Wpedantic, -ffreestanding) and reference no allocator"
	@mkdir -p $(B)/emit/bench && $(CC) $(CSTD) $(WARN) -O0 -o $(B)/emit/bench-emitgen bench/emitgen.c -lm && \
	./$(B)/emit/bench-emitgen $(B)/emit/bench && \
	for f in $(B)/emit/bench/emitted_*.c; do $(EMIT_CC) -Wpedantic -O2 -c -o $${f%.c}.o $$f || exit 1; done && \
	$(CC) $(CSTD) $(WARN) -O0 -DBENCH_EMIT -I$(B)/emit/bench -o $(B)/emit/bench/bench bench/bench.c $(B)/emit/bench/emitted_*.o -lm && \
	echo "emit: make bench's generator (bench/emitgen.c) writes W1-W4, which compile as C99 (-Wpedantic, -O2: no warning) and link with bench/bench.c"
	@if command -v $(ARM_CC) > /dev/null 2>&1; then \
	    for f in $(EMIT_FILES); do \
	        $(ARM_CC) -std=c99 $(ARM_FLAGS) -Os -Wall -Wextra -Werror -c -o $(B)/emit/$$f-m4.o $(B)/emit/$$f.c || exit 1; done; \
	    arm-none-eabi-size $(EMIT_FILES:%=$(B)/emit/%-m4.o); \
	else echo "test-emit: $(ARM_CC) not installed: no Cortex-M4 build of the emitted files (CI installs gcc-arm-none-eabi)"; fi

# the library on a small target (tests/small_target.c, a six-node function and its gradient): its
# values and heap peak on the host; no stack frame of the program above STACK_LIMIT bytes (gcc's
# -fstack-usage, every function the program links); when arm-none-eabi-gcc is installed (CI installs
# it), the same for a Cortex-M4, and the size of its image (-Os, --gc-sections, newlib-nano); the
# same program built without the op families it does not use (GR_ONLY_CORE, GR_ELEMWISE_ONLY), and
# tests/families.c built with each family switch (ops/README.md, Op families)
STACK_LIMIT = 4096
ARM_CC      = arm-none-eabi-gcc
ARM_FLAGS   = -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
STACK_CHECK = awk -F'\t' -v lim=$(STACK_LIMIT) '$$2 + 0 > lim { print "stack frame over " lim " bytes: " $$0; bad = 1 } \
              END { if (!bad) print FILENAME ": no stack frame over " lim " bytes"; exit bad }'
# the op families a build may leave out (ops/table.h), each with what it needs left out too (+);
# GR_ONLY_CORE is all of them: tests/families.c is built with each, warnings as errors
FAMILY_SWITCHES = GR_NO_DOT+GR_NO_LINALG GR_NO_LINALG GR_NO_NNET GR_NO_INDEX+GR_NO_SCAN+GR_NO_AXIS GR_NO_AXIS \
                  GR_NO_JOIN+GR_NO_SCAN+GR_NO_AXIS GR_NO_BATCH GR_NO_SCAN GR_NO_IFELSE GR_NO_GRAPHOP GR_ONLY_CORE \
                  GR_NO_DOT+GR_NO_LINALG+GR_NO_NNET+GR_NO_INDEX+GR_NO_AXIS+GR_NO_JOIN+GR_NO_BATCH+GR_NO_SCAN+GR_NO_IFELSE+GR_NO_GRAPHOP \
                  GR_ONLY_CORE+GR_ELEMWISE_ONLY+GR_EW_sin
# the elementwise rows whose kernels the six-node program runs (GR_ELEMWISE_ONLY), and tests/families.c's
SMALL_EW    = -DGR_ELEMWISE_ONLY -DGR_EW_sin -DGR_EW_cos -DGR_EW_mul -DGR_EW_add -DGR_EW_sub -DGR_EW_neg
FAMILIES_EW = -DGR_ELEMWISE_ONLY -DGR_EW_mul -DGR_EW_sqr -DGR_EW_sub -DGR_EW_add
test-small: gradient.h | $(B)
	$(CC) $(CSTD) $(OPT) $(WARN) -fstack-usage -c -o $(B)/small-host.o tests/small_target.c
	$(CC) -o $(B)/small-host $(B)/small-host.o -lm
	./$(B)/small-host
	@$(STACK_CHECK) $(B)/small-host.su
	$(CC) $(CSTD) $(OPT) $(WARN) -DGR_NO_STDIO -DGR_SMALL_NO_HOOK -o $(B)/small-nostdio tests/small_target.c -lm
	./$(B)/small-nostdio && echo "small target with GR_NO_STDIO: values right"
	$(CC) $(CSTD) $(OPT) $(WARN) -DGR_ONLY_CORE -fstack-usage -c -o $(B)/small-core.o tests/small_target.c
	$(CC) -o $(B)/small-core $(B)/small-core.o -lm
	./$(B)/small-core && echo "small target with GR_ONLY_CORE (no op family it does not use): values right"
	@$(STACK_CHECK) $(B)/small-core.su
	$(CC) $(CSTD) $(OPT) $(WARN) -DGR_ONLY_CORE $(SMALL_EW) -DGR_SMALL_NO_HOOK -o $(B)/small-core-ew tests/small_target.c -lm
	./$(B)/small-core-ew && echo "small target with GR_ONLY_CORE and only its six elementwise rows' kernels: values right"
	@for sw in $(FAMILY_SWITCHES); do \
	  $(CC) $(CSTD) -O0 $(WARN) -D$$(echo $$sw | sed 's/+/ -D/g') -c -o $(B)/families.o tests/families.c || { echo "families: $$sw does not build"; exit 1; }; \
	done; echo "families: tests/families.c builds with each of $(FAMILY_SWITCHES)"
	$(CC) $(CSTD) -O0 $(WARN) -DGR_ONLY_CORE -o $(B)/families tests/families.c -lm
	./$(B)/families
	$(CC) $(CSTD) -O0 $(WARN) -DGR_ONLY_CORE $(FAMILIES_EW) -o $(B)/families-ew tests/families.c -lm
	./$(B)/families-ew
	$(CXX) -x c++ -std=c++11 -O0 $(WARN) -DGR_ONLY_CORE -c -o $(B)/families-cxx.o tests/families.c
	@if $(CC) $(CSTD) -O0 -DGR_NO_DOT -c -o $(B)/families.o tests/families.c > $(B)/families-dot.log 2>&1 \
	    || ! grep -q 'GR_NO_DOT needs GR_NO_LINALG' $(B)/families-dot.log; then \
	  cat $(B)/families-dot.log; echo "families: GR_NO_DOT alone should stop with an #error naming GR_NO_LINALG"; exit 1; fi
	@if $(CC) $(CSTD) -O0 -DGR_NO_LINALG -DFAM_CALL_DET -o $(B)/families-det tests/families.c -lm > $(B)/families-det.log 2>&1 \
	    || ! grep -q "gr_det" $(B)/families-det.log; then \
	  cat $(B)/families-det.log; echo "families: a program calling gr_det with GR_NO_LINALG should fail to build, naming gr_det"; exit 1; fi
	@echo "families: GR_NO_DOT alone stops at its #error; gr_det with GR_NO_LINALG: $$(grep -m1 -o "undefined reference to .gr_det." $(B)/families-det.log)"
	@if command -v $(ARM_CC) > /dev/null 2>&1; then \
	  echo "$(ARM_CC) $(CSTD) $(ARM_FLAGS) -Os -DGR_SMALL_NO_HOOK ... tests/small_target.c"; \
	  $(ARM_CC) $(CSTD) $(ARM_FLAGS) -Os $(WARN) -ffunction-sections -fdata-sections -fstack-usage -DGR_SMALL_NO_HOOK \
	    -c -o $(B)/small-m4.o tests/small_target.c || exit 1; \
	  $(STACK_CHECK) $(B)/small-m4.su || exit 1; \
	  $(ARM_CC) $(ARM_FLAGS) -Wl,--gc-sections --specs=nano.specs --specs=nosys.specs -o $(B)/small-m4.elf $(B)/small-m4.o -lm \
	    2>&1 | grep -v 'is not implemented and will always fail' || true; \
	  test -f $(B)/small-m4.elf || exit 1; \
	  $(ARM_CC) $(CSTD) $(ARM_FLAGS) -Os $(WARN) -ffunction-sections -fdata-sections -DGR_SMALL_NO_HOOK -DGR_NO_STDIO \
	    -c -o $(B)/small-m4-nostdio.o tests/small_target.c || exit 1; \
	  $(ARM_CC) $(ARM_FLAGS) -Wl,--gc-sections --specs=nano.specs --specs=nosys.specs -o $(B)/small-m4-nostdio.elf \
	    $(B)/small-m4-nostdio.o -lm 2>&1 | grep -v 'is not implemented and will always fail' || true; \
	  if arm-none-eabi-nm $(B)/small-m4-nostdio.elf | grep -E ' [TtWw] _?_?(fprintf|fputs|fputc|fwrite|fflush|sfvwrite_r|_fprintf_r|_fputs_r)$$'; then \
	    echo "GR_NO_STDIO build links stream functions"; exit 1; fi; \
	  $(ARM_CC) $(CSTD) $(ARM_FLAGS) -Os $(WARN) -ffunction-sections -fdata-sections -DGR_SMALL_NO_HOOK -DGR_NO_STDIO -DGR_ONLY_CORE $(SMALL_EW) \
	    -c -o $(B)/small-m4-ew.o tests/small_target.c || exit 1; \
	  $(ARM_CC) $(ARM_FLAGS) -Wl,--gc-sections --specs=nano.specs --specs=nosys.specs -o $(B)/small-m4-ew.elf \
	    $(B)/small-m4-ew.o -lm 2>&1 | grep -v 'is not implemented and will always fail' || true; \
	  test -f $(B)/small-m4-ew.elf || exit 1; \
	  $(ARM_CC) $(CSTD) $(ARM_FLAGS) -Os $(WARN) -ffunction-sections -fdata-sections -fstack-usage -DGR_SMALL_NO_HOOK -DGR_NO_STDIO -DGR_ONLY_CORE \
	    -c -o $(B)/small-m4-core.o tests/small_target.c || exit 1; \
	  $(STACK_CHECK) $(B)/small-m4-core.su || exit 1; \
	  $(ARM_CC) $(ARM_FLAGS) -Wl,--gc-sections --specs=nano.specs --specs=nosys.specs -o $(B)/small-m4-core.elf \
	    $(B)/small-m4-core.o -lm 2>&1 | grep -v 'is not implemented and will always fail' || true; \
	  test -f $(B)/small-m4-core.elf || exit 1; \
	  arm-none-eabi-size $(B)/small-m4.elf $(B)/small-m4-nostdio.elf $(B)/small-m4-core.elf $(B)/small-m4-ew.elf; \
	  t=$$(arm-none-eabi-size $(B)/small-m4-ew.elf | awk 'NR == 2 { print $$1 }'); \
	  if [ "$$t" -gt $(SMALL_EW_FLASH) ]; then echo "test-small: the six-row Cortex-M4 image has $$t bytes of code, over $(SMALL_EW_FLASH)"; exit 1; fi; \
	  echo "test-small: the six-row Cortex-M4 image: $$t bytes of code (budget $(SMALL_EW_FLASH))"; \
	else echo "test-small: $(ARM_CC) not installed: no Cortex-M4 build (CI installs gcc-arm-none-eabi)"; fi


# the flash budget of the six-row image (README "Small targets": 104,973 B on 2026-11-26; 751 KB
# would have gone unnoticed)
SMALL_EW_FLASH = 120000

# examples/embedded (README.md, Embedding): make_model builds an MPC cost and its gradient with the
# library, checks gr_call against plain C and emits mpc.c + mpc.h; built again with -DEMBED_CHECK and
# linked with the emitted file, it checks mpc() against gr_call bit for bit; main.c, with only the
# emitted file, built as C99 for the host and run; with arm-none-eabi-gcc, the same for a Cortex-M4:
# the sizes of the emitted code and of the image, the work buffer and the largest stack frame
EMB = $(B)/embedded
EMB_M4 = $(ARM_CC) -std=c99 $(ARM_FLAGS) -Os -Wall -Wextra -Werror -ffunction-sections -fdata-sections -fstack-usage
test-embedded: gradient.h | $(B)
	@rm -rf $(EMB) && mkdir -p $(EMB)
	$(CC) $(CSTD) $(OPT) $(WARN) -o $(EMB)/make_model examples/embedded/make_model.c -lm
	./$(EMB)/make_model $(EMB)
	$(CC) $(CSTD) $(OPT) $(WARN) -DEMBED_CHECK -I$(EMB) -o $(EMB)/check examples/embedded/make_model.c $(EMB)/mpc.c -lm
	./$(EMB)/check
	$(CC) -std=c99 $(OPT) -Wall -Wextra -Wpedantic -Werror -I$(EMB) -o $(EMB)/main examples/embedded/main.c $(EMB)/mpc.c -lm
	./$(EMB)/main
	@if command -v $(ARM_CC) > /dev/null 2>&1; then \
	  echo "$(EMB_M4) ... examples/embedded/main.c $(EMB)/mpc.c"; \
	  $(EMB_M4) -c -o $(EMB)/mpc-m4.o $(EMB)/mpc.c || exit 1; \
	  $(EMB_M4) -DMPC_QUIET -I$(EMB) -c -o $(EMB)/main-m4.o examples/embedded/main.c || exit 1; \
	  $(ARM_CC) $(ARM_FLAGS) -Wl,--gc-sections --specs=nano.specs --specs=nosys.specs -o $(EMB)/main-m4.elf \
	    $(EMB)/main-m4.o $(EMB)/mpc-m4.o -lm 2>&1 | grep -v 'is not implemented and will always fail' || true; \
	  test -f $(EMB)/main-m4.elf || exit 1; \
	  cat $(EMB)/mpc-m4.su $(EMB)/main-m4.su > $(EMB)/m4.su && $(STACK_CHECK) $(EMB)/m4.su || exit 1; \
	  arm-none-eabi-size $(EMB)/mpc-m4.o $(EMB)/main-m4.elf; \
	  echo "embedded, Cortex-M4: work buffer $$(sed -n 's/^#define mpc_WORK_BYTES //p' $(EMB)/mpc.h) B; largest stack frame" \
	    "$$(sort -t'	' -k2 -n $(EMB)/m4.su | tail -1 | awk -F'	' '{ n = split($$1, p, ":"); print $$2 " B (" p[n] ")" }')"; \
	else echo "test-embedded: $(ARM_CC) not installed: no Cortex-M4 build of the example (CI installs gcc-arm-none-eabi)"; fi

# every stage in turn, each announced and timed (make test-<stage> runs one)
TEST_STAGES = check-header test-gcc test-emit test-dot test-clang test-cxx test-link test-api test-san test-alloc test-fuzz-replay test-cblas test-examples test-small test-portable test-install
test:
	@for t in $(TEST_STAGES); do \
	    echo "==== $$t"; start=$$(date +%s); \
	    $(MAKE) --no-print-directory $$t || { echo "==== $$t failed after $$(( $$(date +%s) - start )) s"; exit 1; }; \
	    echo "==== $$t: $$(( $$(date +%s) - start )) s"; \
	done
	@echo "make test: all passed"

# regenerate tests/api_contract.c from the project's API contract, kept outside the repository (../shared/API.md)
api-contract:
	@{ sed -n '1,5p' tests/api_contract.c; awk -f tests/api_protos.awk ../shared/API.md; echo; echo 'int main(void) { return 0; }'; } > $(B)/api_contract.c && mv $(B)/api_contract.c tests/api_contract.c

clean:
	rm -rf $(B)

# ---- benchmarks (W1-W6, defined at the top of bench/bench.c): built-in kernels, then CBLAS (OpenBLAS, one thread) ------------
BENCH_FLAGS = -O3 -march=native
# The generator step: bench/emitgen.c writes W1-W4 with gr_fn_emit_c into $(B)/bench-emit (one .c each
# and bench_emit.h); bench.c is built with them (-DBENCH_EMIT, the same flags) and times them in rows
# "..., emitted C" beside gr_call and the hand-written C
bench-emit: gradient.h | $(B)
	@rm -rf $(B)/bench-emit && mkdir -p $(B)/bench-emit
	$(CC) $(CSTD) $(WARN) -O2 -o $(B)/bench-emitgen bench/emitgen.c -lm
	./$(B)/bench-emitgen $(B)/bench-emit
bench: bench-emit
	$(CC) $(CSTD) $(BENCH_FLAGS) -DBENCH_EMIT -I$(B)/bench-emit -o $(B)/bench bench/bench.c $(B)/bench-emit/emitted_*.c -lm
	$(CC) $(CSTD) $(BENCH_FLAGS) -DBENCH_EMIT -I$(B)/bench-emit -DGRADIENT_CBLAS -o $(B)/bench-cblas bench/bench.c $(B)/bench-emit/emitted_*.c -lopenblas -lm
	./$(B)/bench
	OPENBLAS_NUM_THREADS=1 ./$(B)/bench-cblas
# the peers on the same machine (not part of make test or CI): bench --peers (built with GRADIENT_CBLAS) beside
# NumPy with hand-derived gradients, PyTorch's autograd and ADOL-C's drivers, whichever are installed
# (Debian: python3-numpy python3-torch libadolc-dev), one thread each; a table of ratios to the hand-written C
bench-peers: gradient.h | $(B)
	CC="$(CC)" BENCH_FLAGS="$(BENCH_FLAGS)" sh bench/peers/run.sh $(B)
