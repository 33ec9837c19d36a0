-- rlaas: every policy of one request in one call, all or nothing.
-- KEYS[i] = K of policy i; ARGV = for each: strategy (0 fixed, 1 sliding
-- log, 2 sliding, 3 token, 4 leaky, 5 gcra), limit, window ms, cost, mode.
-- Each is decided without charging; only if every one that is not a dry
-- run (nor forced) allows are they all charged. Reply: 4 integers each.
-- A ban: strategy 6, length D, longest M, factor F (0: read, never
-- started: a section honouring its zone's bans), O; K:ban holds
-- "<until>:<length>" (src/core/rlaas_ban.h). While it holds nothing is decided.
-- O: the place (1-based) of the policy whose denial starts a ban (the
-- section's own limit, keyed as the ban is); 0: any denial.
-- A concurrency limit (RLaaSConcurrency): strategy 7, N (1 to 500), T
-- ms, the request's token (16 hex digits) in place of the cost, mode
-- (lua/concurrency.lua); its key ends in ":conc".
local run = {[0] = rlaas_fixed, rlaas_sliding_log, rlaas_sliding, rlaas_token,
  rlaas_leaky, rlaas_gcra}
local P, seen, ban = {}, {}, nil
if #KEYS < 1 or #KEYS > 8 or #ARGV < 5 * #KEYS then
  return redis.error_reply('ERR rlaas: 1 to 8 keys, 5 arguments each')
end
for i = 1, #KEYS do
  local j = 5 * i - 4
  -- one key twice would be charged twice
  if seen[KEYS[i]] then return redis.error_reply('ERR rlaas: bad policy ' .. i) end
  seen[KEYS[i]] = true
  if ARGV[j] == '6' then
    local D, M, F = int(ARGV[j + 1], 1, 2^35), int(ARGV[j + 2], 1, 2^35), int(ARGV[j + 3], 0, 1000)
    local O = int(ARGV[j + 4], 0, #KEYS)
    if ban or not (D and M and F and O) or M < D or O == i or string.sub(KEYS[i], -4) ~= ':ban' then
      return redis.error_reply('ERR rlaas: bad ban ' .. i)
    end
    ban = {i = i, K = KEYS[i], D = D, M = M, F = F, O = O}
  elseif ARGV[j] == '7' then
    local N, T, tok, m = int(ARGV[j + 1], 1, 500), int(ARGV[j + 2], 1, 2^35), ARGV[j + 3], int(ARGV[j + 4], 0, 7)
    if not (N and T and m) or #tok ~= 16 or not string.match(tok, '^[0-9a-f]+$') or string.sub(KEYS[i], -5) ~= ':conc' then
      return redis.error_reply('ERR rlaas: bad concurrency ' .. i)
    end
    P[#P + 1] = {rlaas_concurrency, KEYS[i], N, T, tok, m, i}
  else
    local f = run[tonumber(ARGV[j])]
    local L, W, c, m = args(f, ARGV[j + 1], ARGV[j + 2], ARGV[j + 3], ARGV[j + 4])
    if not (f and L) then
      return redis.error_reply('ERR rlaas: bad policy ' .. i)
    end
    P[#P + 1] = {f, KEYS[i], L, W, c, m, i}
  end
end
if #P < 1 then return redis.error_reply('ERR rlaas: a ban alone') end
local out = {}
local function reply()
  local r = {}
  for i = 1, #KEYS do
    for k = 1, 4 do r[4 * i - 4 + k] = out[i][k] end
  end
  return r
end
local last
if ban then
  local u, l = string.match(redis.call('GET', ban.K) or '', '^(%d+):(%d+)$')
  u, l = tonumber(u), tonumber(l)
  if u and u > now + 2 * ban.M then u, l = nil, nil end
  if u and u > now then
    for _, p in ipairs(P) do out[p[7]] = {0, 0, u - now, u - now} end
    out[ban.i] = {0, 1, u - now, u - now}
    return reply()
  end
  last = l
end
-- one policy is charged at once, as its own script does
local go = true
for _, p in ipairs(P) do
  local i = p[7]
  out[i] = p[1](p[2], p[3], p[4], p[5], p[6], #P == 1)
  -- an error (fixed's RLAASWINDOW) before anything is written
  if out[i].err then return out[i] end
  if out[i][1] == 0 and p[6] % 4 < 2 and p[6] % 8 < 4 then go = false end
end
if go and #P > 1 then
  for _, p in ipairs(P) do out[p[7]] = p[1](p[2], p[3], p[4], p[5], p[6], true) end
end
if ban then
  out[ban.i] = {1, 0, 0, 0}
  if not go and ban.F > 0 and (ban.O == 0 or out[ban.O][1] == 0) then
    local len = ban.D
    if last and ban.F > 1 then len = math.min(math.max(last, ban.D) * ban.F, ban.M) end
    local ttl = len
    if ban.F > 1 then ttl = len + ban.M end
    redis.call('SET', ban.K, s(now + len) .. ':' .. s(len), 'PX', s(ttl))
    out[ban.i] = {0, 2, len, len}
  end
end
return reply()
