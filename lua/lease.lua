-- rlaas lease (RLaaSLease on): a portion of one policy's remaining quota,
-- taken at once for a server to spend in its shared memory.
-- KEYS[1] = K; ARGV = strategy (0 fixed, 2 sliding, 3 token, 4 leaky,
-- 5 gcra: never the sliding log), limit, window ms, cost (>= 1), mode (0,
-- or 1: a limit read per request, RLaaSLimit expr=, which the server
-- leases per limit: a portion is spent only by requests of the limit it
-- was taken for), want, back, at. The server's last portion of K lapsed with back units
-- unspent (0: none), charged at Redis time at (ms, as this script said
-- then): they are given back first, as a credit gives them: to the fixed
-- window holding at while it is the current one; to a bucket, less what
-- its refill has made good since (L / W a ms: a bucket full or empty in
-- the meantime forgave the charge, and giving it back then would admit
-- more than the limit), never above full; never to the sliding window;
-- never to a record reset since (lua/forget.lua's mark). So a client
-- that pauses loses little of its quota. Then the request is decided as
-- usual; if it is allowed, the portion min(want, max(cost, remaining /
-- 8)) units (the request's own cost included) is charged in one go.
-- Reply: the request's verdict (4 integers, remaining after the portion),
-- then {granted > 0, granted, lease ms, ms to the window's end (fixed,
-- sliding; else 0)}, then {1, units given back, 0, 0}, then {1, now (ms),
-- 0, 0}: the time the portion was charged at, for its own give-back. A
-- lease lasts min(W / 10, 1 s), and for fixed and sliding no longer than
-- the current window; what the server does not spend by then lapses, and
-- the server's next portion gives it back (never counted twice: the
-- server spends none of it once its lease is over).
local run = {[0] = rlaas_fixed, false, rlaas_sliding, rlaas_token,
  rlaas_leaky, rlaas_gcra}
local s = tonumber(ARGV[1])
local f = run[s]
local back = {[0] = rlaas_fixed_credit, false, false,
  rlaas_token_credit, rlaas_leaky_credit, rlaas_gcra_credit}
local L, W, c, m = args(f, ARGV[2], ARGV[3], ARGV[4], ARGV[5])
local want = int(ARGV[6], 1, 1e9)
local b, at = int(ARGV[7], 0, 1e9), int(ARGV[8], 0, 2^52)
-- the record the charge went to was reset since (the console's forget
-- leaves a mark): its units are not given back into the fresh state
-- (a mark that can't be read, its Cluster slot moving, counts as one:
-- nothing is given back, nothing written before)
local function forgot(k)
  if not k then return true end
  local t = redis.pcall('GET', k .. ':forgot')
  if type(t) == 'table' then return true end
  t = tonumber(t)
  return t and t >= at
end
-- a calendar's periods, a limit over 1e9: never leased (the module asks none)
if not (f and L and want and b and at) or (m ~= 0 and m ~= 1) or c < 1 or
    #KEYS ~= 1 or type(W) == 'table' or L > 1e9 then
  return redis.error_reply('ERR rlaas: bad lease')
end
local K = KEYS[1]
local given = 0
if b > 0 and at <= now and s >= 3 then
  -- exact: floating point could round the refill down by a unit
  local q, x = muldiv(now - at, L, W)
  b = b - q - (x > 0 and 1 or 0)
end
-- the sliding window: a state kept ahead of Redis' clock (stepped back)
-- takes a credit in its current count whatever at says, so none is given
if b > 0 and at <= now and back[s] and
    not forgot(s == 0 and (window(K, W, at)) or K) then
  given = back[s](K, L, W, math.min(b, L), m, at)
end
local v = f(K, L, W, c, m, false)
if v.err then return v end
if v[1] == 0 then return {v[1], v[2], v[3], v[4], 0, 0, 0, 0, 1, given, 0, 0, 1, now, 0, 0} end
local g = math.min(math.max(want, c), math.max(c, math.floor(v[2] / 8)), v[2])
local out = f(K, L, W, g, m, true)
if out.err then return out end
if out[1] == 0 then
  g = c
  out = f(K, L, W, c, m, true)
  if out.err then return out end
end
local ms, left = math.max(1, math.min(math.floor(W / 10), 1000)), 0
if ARGV[1] == '0' or ARGV[1] == '2' then
  left = (math.floor(now / W) + 1) * W - now
  ms = math.max(1, math.min(ms, left))
end
return {out[1], out[2], out[3], out[4], 1, g, ms, left, 1, given, 0, 0, 1, now, 0, 0}
