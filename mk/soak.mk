# The soak (tools/soak/soak.pl): every backend under mixed traffic and a
# seeded schedule of random faults, invariants checked from a log of every
# request; not part of `make test`.
#   make soak                          10 minutes, every backend
#   make soak DURATION=1h SEED=42 BACKENDS=redis,cluster SOAK_DIR=/tmp/s
#   make soak DURATION=2m BACKENDS=local,redis     the short mode
# The report: $(SOAK_DIR)/report.md and report.json (default build/soak).

DURATION ?= 10m
SEED ?=
BACKENDS ?= local,redis,lease,sentinel,cluster,tls
SOAK_DIR ?= build/soak

.PHONY: soak

soak: $(MODULE)
	DURATION='$(DURATION)' SEED='$(SEED)' BACKENDS='$(BACKENDS)' SOAK_DIR='$(SOAK_DIR)' \
	    perl tools/soak/soak.pl
