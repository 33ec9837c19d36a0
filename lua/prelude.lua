-- rlaas: prelude + a strategy's body + a call, or + all six + multi.lua.
-- KEYS[1] = K, built in C; ARGV = limit, window ms (or calendar below),
-- cost (1; 0: a check), mode (0; bit 1: limit varies per request, bit 2:
-- dry run, bit 4: forced, charged even if denied, buckets at most full);
-- reply {ok, remaining, reset, retry}. A denial never charges.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME') -- rlaas:clock
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function s(x) return string.format('%d', x) end
local function int(x, lo, hi)
  x = tonumber(x)
  if x and x >= lo and x <= hi and x % 1 == 0 then return x end
end
-- bodies taking limits up to 2^50 (BIG), calendars (CAL)
local BIG, CAL = {}, {}
-- "<tag>/<b0>/<b1>/<b2>/<b3>": periods [b0, b1), [b1, b2), [b2, b3)
local function calendar(W)
  local t = {}
  t.tag, t[1], t[2], t[3], t[4] = string.match(W or '',
    '^(%d%d?[dwM])/(%d+)/(%d+)/(%d+)/(%d+)$')
  if not t.tag then return end
  for i = 1, 4 do
    if #t[i] > 16 then return end
    t[i] = tonumber(t[i])
    if t[i] >= 2^52 or (i > 1 and (t[i] <= t[i - 1] or t[i] - t[i - 1] > 2^35)) then return end
  end
  return t
end
-- one policy's arguments, or nothing
local function args(f, L, W, c, m)
  local top = BIG[f] and 2^50 or 1e9
  L, c, m = int(L, 1, top), int(c or 1, 0, top), int(m or 0, 0, 7)
  W = int(W, 1, 2^35) or (CAL[f] and calendar(W))
  if L and W and c and m and c <= L then return L, W, c, m end
end
-- exact a*b = q*m + x, 0 <= x < m (a, m < 2^36, b and q < 2^53): directly
-- while a*b < 2^52, else by 16-bit long multiplication
local function muldiv(a, b, m)
  local q, x, p = 0, 0, a * b
  if p >= 0 and p < 4503599627370496 then
    q = math.floor(p / m)
    x = p - q * m
    if x < 0 then q, x = q - 1, x + m elseif x >= m then q, x = q + 1, x - m end
    return q, x
  end
  p = 2^48
  while p >= 1 do
    x = x * 65536 + a * (math.floor(b / p) % 65536)
    local k = math.floor(x / m)
    q, x, p = q * 65536 + k, x - k * m, p / 65536
  end
  return q, x
end
local function gcd(a, b) while b > 0 do a, b = b, a % b end return a end
-- clock gone back: state stamped over W ahead is none, up to W ahead held
local function clock(ts, W)
  if ts > now + W then return nil end
  return math.max(ts, now)
end
-- n whole + f parts of c (0 <= f < c), as "n:f" or n * c + f
local function level(v, c)
  local a, b = string.match(v or '', '^(%d+):(%d+)$')
  local n, f = tonumber(a), tonumber(b)
  if not n then
    v = tonumber(v)
    if not v then return end
    v = math.max(0, math.floor(v))
    n = math.floor(v / c)
    f = v - n * c
  end
  return n, math.min(f, c - 1)
end
local function put(n, f, c, L)
  if L * c < 2^53 then return s(n * c + f) end
  return s(n) .. ':' .. s(f)
end
-- a bucket, HASH K {<field>, ts[, l]}: level n + f/W, stamp (held if
-- ahead), time since, rate. With l (the limit varies): parts of 1/W, rate
-- l; else ticks of gcd(L, W)/W, rate L
local function bucket_get(K, field, L, W)
  local h = redis.call('HMGET', K, field, 'ts', 'l')
  local ots, l = tonumber(h[2]), int(h[3], 1, 1e9)
  local at = ots and clock(math.floor(ots), W)
  if not at then return end
  local g, n, f = 1
  if l then n, f = level(h[1], W) else
    g = gcd(L, W)
    n, f = level(h[1], W / g)
  end
  if n then return n, f * g, at, at - math.floor(ots), l or L, l end
end
-- with l if the limit varies or it had one, else in ticks
local function bucket_put(K, field, n, f, ts, L, W, m, l, ttl)
  if m % 2 == 1 or l then
    redis.call('HMSET', K, field, put(n, f, W, L), 'ts', s(ts), 'l', s(L))
  else
    local g = gcd(L, W)
    redis.call('HMSET', K, field, put(n, f / g, W / g, L), 'ts', s(ts))
  end
  redis.call('PEXPIRE', K, s(math.max(1, ttl)))
end
-- allowed or forced, committed, not a check
local function charges(ok, commit, cost, m)
  return (ok or m % 8 >= 4) and commit and cost > 0
end
-- a single policy
local function one(f)
  local L, W, c, m = args(f, ARGV[1], ARGV[2], ARGV[3], ARGV[4])
  if not L then
    return redis.error_reply('ERR rlaas: bad limit, window, cost or mode')
  end
  return f(KEYS[1], L, W, c, m, true)
end
