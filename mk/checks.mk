# Memory and sanitizer checks, fuzzing (tools/sanitize.sh, tools/valgrind.sh,
# tools/fuzz.sh; the harness is in fuzz/).
#   make asan          module with ASan+UBSan: build/asan/mod_rlaas.so
#   make asan-check    that module in httpd under a request and fault mix;
#                      fails on any sanitizer report
#   make valgrind      the normal module in httpd -X under memcheck, and a
#                      per-request memory growth check
#   make fuzz          libFuzzer targets, FUZZ_SECONDS (30) each
#   make fuzz-replay   the seed corpora and saved crashes only, once
#   make checks        all of the above except fuzz-replay

.PHONY: asan asan-check valgrind fuzz fuzz-replay checks

asan:
	sh tools/sanitize.sh build

asan-check:
	sh tools/sanitize.sh check

valgrind: $(MODULE)
	sh tools/valgrind.sh

fuzz:
	sh tools/fuzz.sh

fuzz-replay:
	sh tools/fuzz.sh --replay

checks: asan-check valgrind fuzz
