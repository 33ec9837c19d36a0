-- rlaas credit: units given back (RLaaSCountIf's refund of a charge whose
-- condition turned out false; the console's credit N). KEYS[i] = K of
-- credit i; ARGV = for each: strategy (0 .. 5), limit, window ms, units
-- (1 .. 1e9; fixed 2^50), mode (bit 1 as the charge's), age (ms at least
-- since the units were charged; 0: now). Never below the fresh state, never making
-- state where there is none. Reply: 4 integers each, {1, units given
-- back, 0, 0}.
local run = {[0] = rlaas_fixed_credit, rlaas_sliding_log_credit,
  rlaas_sliding_credit, rlaas_token_credit, rlaas_leaky_credit,
  rlaas_gcra_credit}
local C, seen = {}, {}
if #KEYS < 1 or #KEYS > 8 or #ARGV < 6 * #KEYS then
  return redis.error_reply('ERR rlaas: 1 to 8 keys, 6 arguments each')
end
for i = 1, #KEYS do
  local j = 6 * i - 5
  local f = run[tonumber(ARGV[j])]
  local L, W, _, m = args(f, ARGV[j + 1], ARGV[j + 2], 0, ARGV[j + 4])
  local n, age = int(ARGV[j + 3], 1, BIG[f] and 2^50 or 1e9), int(ARGV[j + 5], 0, 2^52)
  if seen[KEYS[i]] or not (f and L and n and age) or m % 8 >= 2 then
    return redis.error_reply('ERR rlaas: bad credit ' .. i)
  end
  seen[KEYS[i]] = true
  C[i] = {f, KEYS[i], L, W, n, m, math.max(0, now - age)}
end
local out = {}
for i, c in ipairs(C) do
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = 1, c[1](c[2], c[3], c[4], c[5], c[6], c[7]), 0, 0
end
return out
