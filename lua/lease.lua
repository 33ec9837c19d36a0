-- rlaas lease (RLaaSLease): a portion of a policy's remaining quota,
-- taken at once for a server to spend in its shared memory; for a request
-- of several policies, all or nothing, a portion of each that asks one.
-- KEYS[i] = K of policy i (1 to 8); ARGV = for each, 8 words: strategy (0
-- fixed, 2 sliding, 3 token, 4 leaky, 5 gcra: never the sliding log),
-- limit, window ms, cost (>= 1), mode (0, or 1: a limit read per request,
-- RLaaSLimit expr=, which the server leases per limit: a portion is spent
-- only by requests of the limit it was taken for), want, back, at; fixed's
-- window may be a calendar's periods (its lease ends with the period). want
-- 0 (one policy of several only): no portion, the request's cost alone
-- is charged (the server holds units of it, or another request is taking
-- them). The server's last portion of K lapsed with back units
-- unspent (0: none), charged at Redis time at (ms, as this script said
-- then): they are given back first, as a credit gives them: to the fixed
-- window holding at while it is the current one; to a bucket, less what
-- its refill has made good since (L / W a ms: a bucket full or empty in
-- the meantime forgave the charge, and giving it back then would admit
-- more than the limit), never above full; never to the sliding window;
-- never to a record reset since (lua/forget.lua's mark). So a client
-- that pauses loses little of its quota. Then the request is decided as
-- usual, every policy without a charge; only if all allow is each charged
-- its portion min(want, max(cost, remaining / 8)) units (the request's
-- own cost included) in one go; a refusal charges none.
-- Reply, for each key: the request's verdict (4 integers, remaining after
-- the portion), then {granted > 0, granted, lease ms, ms to the window's
-- end (fixed, sliding; else 0)}, then {1, units given back, 0, 0}, then
-- {1, now (ms), 0, 0}: the time the portion was charged at, for its own
-- give-back. A
-- lease lasts min(W / 10, 1 s), and for fixed and sliding no longer than
-- the current window; what the server does not spend by then lapses, and
-- the server's next portion gives it back (never counted twice: the
-- server spends none of it once its lease is over).
local run = {[0] = rlaas_fixed, false, rlaas_sliding, rlaas_token,
  rlaas_leaky, rlaas_gcra}
local back = {[0] = rlaas_fixed_credit, false, false,
  rlaas_token_credit, rlaas_leaky_credit, rlaas_gcra_credit}
local n = #KEYS
if n < 1 or n > 8 or #ARGV < 8 * n then
  return redis.error_reply('ERR rlaas: bad lease')
end
-- the record the charge went to was reset since (the console's forget
-- leaves a mark): its units are not given back into the fresh state
-- (a mark that can't be read, its Cluster slot moving, counts as one:
-- nothing is given back, nothing written before)
local function forgot(k, at)
  if not k then return true end
  local t = redis.pcall('GET', k .. ':forgot')
  if type(t) == 'table' then return true end
  t = tonumber(t)
  return t and t >= at
end
local P, seen, asked = {}, {}, false
for i = 1, n do
  local j = 8 * i - 8
  local s = tonumber(ARGV[j + 1])
  local f = run[s]
  local L, W, c, m = args(f, ARGV[j + 2], ARGV[j + 3], ARGV[j + 4], ARGV[j + 5])
  local want = int(ARGV[j + 6], n == 1 and 1 or 0, 1e9)
  local b, at = int(ARGV[j + 7], 0, 1e9), int(ARGV[j + 8], 0, 2^52)
  -- a limit over 1e9: never leased (the module asks none); one key twice
  -- would be charged twice; units go back only with a portion
  if not (f and L and want and b and at) or (m ~= 0 and m ~= 1) or c < 1 or
      L > 1e9 or seen[KEYS[i]] or
      (want == 0 and (b > 0 or at > 0)) then
    return redis.error_reply('ERR rlaas: bad lease')
  end
  seen[KEYS[i]] = true
  asked = asked or want > 0
  P[i] = {s = s, f = f, K = KEYS[i], L = L, W = W, c = c, m = m,
    want = want, b = b, at = at, given = 0}
end
if not asked then return redis.error_reply('ERR rlaas: bad lease') end
-- a fixed window declared in its key (Redis Cluster) that is not Redis'
-- current one: the module calls again with it (RLAASWINDOW), so nothing
-- may be written before, a give-back included (else given twice)
for _, p in ipairs(P) do
  if p.s == 0 then
    local k, name = window(p.K, p.W, now)
    if not k then return redis.error_reply('RLAASWINDOW ' .. name .. ' ' .. s(now)) end
  end
end
for _, p in ipairs(P) do
  local b = p.b
  if b > 0 and p.at <= now and p.s >= 3 then
    -- exact: floating point could round the refill down by a unit
    local q, x = muldiv(now - p.at, p.L, p.W)
    b = b - q - (x > 0 and 1 or 0)
  end
  -- the sliding window: a state kept ahead of Redis' clock (stepped
  -- back) takes a credit in its current count whatever at says, so none
  -- is given
  if b > 0 and p.at <= now and back[p.s] and
      not forgot(p.s == 0 and (window(p.K, p.W, p.at)) or p.K, p.at) then
    p.given = back[p.s](p.K, p.L, p.W, math.min(b, p.L), p.m, p.at)
  end
end
local out, go = {}, true
for i, p in ipairs(P) do
  -- (fixed's RLAASWINDOW was answered above, before any write)
  local v = p.f(p.K, p.L, p.W, p.c, p.m, false)
  if v.err then return v end
  out[i] = {v[1], v[2], v[3], v[4], 0, 0, 0, 0, 1, p.given, 0, 0, 1, now, 0, 0}
  go = go and v[1] ~= 0
end
for i, p in ipairs(P) do
  if not go then break end
  local g = p.c
  if p.want > 0 then
    g = math.min(math.max(p.want, p.c), math.max(p.c, math.floor(out[i][2] / 8)),
      out[i][2])
  end
  local v = p.f(p.K, p.L, p.W, g, p.m, true)
  if v.err then return v end
  if v[1] == 0 then
    g = p.c
    v = p.f(p.K, p.L, p.W, p.c, p.m, true)
    if v.err then return v end
  end
  local o = out[i]
  o[1], o[2], o[3], o[4] = v[1], v[2], v[3], v[4]
  if p.want > 0 then
    -- a tenth of the window, a calendar's period (fixed only) its own
    -- length; no longer than the window or the period left (fixed,
    -- sliding)
    local from, to, left = 0, p.W, 0
    if type(p.W) == 'table' then
      from, to = span(p.W, now)
      left = to - now
    elseif p.s == 0 or p.s == 2 then
      left = (math.floor(now / p.W) + 1) * p.W - now
    end
    local ms = math.max(1, math.min(math.floor((to - from) / 10), 1000))
    if left > 0 then ms = math.max(1, math.min(ms, left)) end
    o[5], o[6], o[7], o[8] = 1, g, ms, left
  end
end
local r = {}
for i = 1, n do
  for k = 1, 16 do r[16 * i - 16 + k] = out[i][k] end
end
return r
