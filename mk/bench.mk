# make bench: throughput, latency, Redis commands and memory per case
# (bench/run.sh); make bench-profile: where the time goes (bench/profile.sh).
.PHONY: bench bench-profile bench-peers
bench: all
	bash bench/run.sh
bench-profile: all
	bash bench/profile.sh
# make bench-peers: CPU per request beside mod_qos, mod_evasive, nginx
# limit_req and nginx + lua-resty-redis (bench/peers.sh).
bench-peers: all
	bash bench/peers.sh
# make bench-local: instructions per decision of the local engine under
# callgrind (bench/local_ir.sh); BASE=main beside it to compare.
.PHONY: bench-local
bench-local:
	sh bench/local_ir.sh
