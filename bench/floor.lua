-- The floor case's script (bench/mod_rlaas_floor.c, make bench-peers):
-- embedded in place of every script of mod_rlaas, it touches no key and
-- answers the smallest reply the engine reads as a verdict (allowed,
-- remaining, reset ms, retry ms).
return {1, 0, 0, 0}
