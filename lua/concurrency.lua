-- rlaas concurrency (RLaaSConcurrency): ZSET K (":conc"), a member per
-- request in flight, its token (16 hex digits, one per client request),
-- scored by the ms it was taken. A slot lasts at most T ms
-- (RLaaSConcurrencyTimeout): older ones are gone, and, by the clock rule,
-- so are ones stamped over T ahead. Allowed while fewer than N are held:
-- {1, N - held, 0 (1000 if none is left), 0}, the slot taken when
-- committed; refused: {0, 0, 1000, 1000}, nothing taken, unless a dry run
-- (mode bit 2), which takes one whatever (up to 500) so that what is in
-- flight stays known. lua/release.lua gives it back (ZREM of the token);
-- src/core/rlaas_conc.c is the same in C.
local function rlaas_concurrency(K, N, T, tok, m, commit)
  redis.call('ZREMRANGEBYSCORE', K, '-inf', s(now - T))
  redis.call('ZREMRANGEBYSCORE', K, '(' .. s(now + T), '+inf')
  local n = redis.call('ZCARD', K)
  local ok = n < N
  local rem = 0
  if commit and (ok or (m % 4 >= 2 and n < 500)) then
    n = n + redis.call('ZADD', K, s(now), tok)
    local top = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
    redis.call('PEXPIRE', K, s(math.max(now, tonumber(top[2])) + T - now))
  end
  if ok then rem = N - n end
  if ok and rem > 0 then return {1, rem, 0, 0} end
  if ok then return {1, 0, 1000, 0} end
  return {0, 0, 1000, 1000}
end
