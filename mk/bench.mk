# make bench: throughput, latency, Redis commands and memory per case
# (bench/run.sh); make bench-profile: where the time goes (bench/profile.sh).
.PHONY: bench bench-profile bench-peers
bench: all
	bash bench/run.sh
bench-profile: all
	bash bench/profile.sh
# make bench-peers: CPU per request beside mod_qos, mod_evasive, nginx
# limit_req and nginx + lua-resty-redis (bench/peers.sh).
bench-peers: all bench-floor
	bash bench/peers.sh

# The floor case of bench-peers: bench/mod_rlaas_floor.c linked with the
# very objects of mod_rlaas.so's Redis engine and core (the .lo files its
# apxs build leaves), every embedded script replaced by bench/floor.lua.
# Built here only: never installed, never packaged.
.PHONY: bench-floor
FLOOR_DIR = build/floor
FLOOR_MODULE = $(FLOOR_DIR)/.libs/mod_rlaas_floor.so
FLOOR_SCRIPTS = $(FLOOR_DIR)/rlaas_scripts.c
bench-floor: $(FLOOR_MODULE)
$(FLOOR_SCRIPTS): bench/floor.lua tools/embed-lua.sh
	@mkdir -p $(FLOOR_DIR)
	@sh tools/embed-lua.sh $@ $(foreach f,$(LUA),bench/floor.lua)
$(FLOOR_MODULE): $(MODULE) bench/mod_rlaas_floor.c $(FLOOR_SCRIPTS)
	@echo "  CC+LD   mod_rlaas_floor.so (bench only)"
	@$(APXS) -c -o $(FLOOR_DIR)/mod_rlaas_floor.la $(INC) \
	    $(foreach f,$(WARN) $(EXTRA_CFLAGS),-Wc,$(f)) \
	    $(foreach f,$(EXTRA_LDFLAGS),-Wl,$(f)) \
	    bench/mod_rlaas_floor.c $(FLOOR_SCRIPTS) \
	    $(patsubst %.c,%.lo,$(CORE_SRC)) \
	    -lhiredis -lssl -lcrypto >$(FLOOR_DIR)/apxs.log 2>&1 || \
	    { cat $(FLOOR_DIR)/apxs.log; exit 1; }
# (the floor's own objects land beside its source; build/ goes with clean)
.PHONY: bench-floor-clean
clean: bench-floor-clean
bench-floor-clean:
	rm -rf bench/*.lo bench/*.slo bench/*.o bench/.libs
# make bench-local: instructions per decision of the local engine under
# callgrind (bench/local_ir.sh); BASE=main beside it to compare.
.PHONY: bench-local
bench-local:
	sh bench/local_ir.sh
