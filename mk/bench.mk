# make bench: throughput, latency, Redis commands and memory per case
# (bench/run.sh); make bench-profile: where the time goes (bench/profile.sh).
.PHONY: bench bench-profile
bench: all
	bash bench/run.sh
bench-profile: all
	bash bench/profile.sh
