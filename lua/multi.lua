-- rlaas: every policy of one request in one call, all or nothing.
-- KEYS[i] = K of policy i; ARGV = for each: strategy (0 fixed, 1 sliding
-- log, 2 sliding, 3 token, 4 leaky, 5 gcra), limit, window ms, cost, mode.
-- Each is decided without charging; only if every one that is not a dry
-- run allows are they all charged. Reply: 4 integers per policy.
local run = {[0] = rlaas_fixed, rlaas_sliding_log, rlaas_sliding, rlaas_token,
  rlaas_leaky, rlaas_gcra}
local P, seen = {}, {}
if #KEYS < 1 or #KEYS > 8 or #ARGV < 5 * #KEYS then
  return redis.error_reply('ERR rlaas: 1 to 8 keys, 5 arguments each')
end
for i = 1, #KEYS do
  local j = 5 * i - 4
  local f = run[tonumber(ARGV[j])]
  local L, W, c, m = args(ARGV[j + 1], ARGV[j + 2], ARGV[j + 3], ARGV[j + 4])
  -- one key twice would be charged twice
  if not (f and L) or seen[KEYS[i]] then
    return redis.error_reply('ERR rlaas: bad policy ' .. i)
  end
  seen[KEYS[i]] = true
  P[i] = {f, KEYS[i], L, W, c, m}
end
local out, go = {}, true
for i, p in ipairs(P) do
  out[i] = p[1](p[2], p[3], p[4], p[5], p[6], false)
  -- an error (fixed's RLAASWINDOW) before anything is written
  if out[i].err then return out[i] end
  if out[i][1] == 0 and p[6] < 2 then go = false end
end
if go then
  for i, p in ipairs(P) do out[i] = p[1](p[2], p[3], p[4], p[5], p[6], true) end
end
local r = {}
for i = 1, #P do
  for k = 1, 4 do r[4 * i - 4 + k] = out[i][k] end
end
return r
