-- rlaas leaky bucket: HASH K (ends in :lb) {level, ts}
-- ticks: a hit is c ticks of water, r ticks drain per ms, empty after W ms
local g = gcd(L, W)
local c, r = W / g, L / g
-- level = n hits + f ticks (0 <= f < c); missing key: empty
local n, f, ts = 0, 0, now
local h = redis.call('HMGET', K, 'level', 'ts')
local v, ots = h[1], tonumber(h[2])
if ots then ots = math.floor(ots) end
local at = ots and clock(ots)
if v and at then
  local a, b = string.match(v, '^(%d+):(%d+)$')
  if a then n, f = tonumber(a), tonumber(b)
  elseif tonumber(v) then
    v = math.max(0, math.floor(tonumber(v)))
    n = math.floor(v / c)
    f = v - n * c
  end
  if f >= c then f = c - 1 end
  -- never more water than the bucket holds (the limit or window may have
  -- changed): a level past L would give a remaining below 0
  if n >= L then n, f = L, 0 end
  -- held (clock went back): no drain, time stays at the stamp
  local dt = at - ots
  ts = at
  if dt >= W then
    n, f = 0, 0
  else
    local dq, dx = muldiv(dt, r, c)
    n, f = n - dq, f - dx
    if f < 0 then n, f = n - 1, f + c end
    if n < 0 then n, f = 0, 0 end
  end
end
-- a hit fits iff level + c <= L * c, i.e. ceil(level / c) < L
local u = n + (f > 0 and 1 or 0)
local ok = u < L
if ok then n, u = n + 1, u + 1 end
local off = ts - now
-- until empty: ceil((n * c + f) / r)
local q, x = muldiv(n, c, r)
local reset = off + q + math.ceil((x + f) / r)
local retry = 0
if u >= L then
  -- until level <= (L - 1) * c
  q, x = muldiv(n - L + 1, c, r)
  retry = off + q + math.ceil((x + f) / r)
end
if L * c < 2^53 then v = s(n * c + f) else v = s(n) .. ':' .. s(f) end
redis.call('HMSET', K, 'level', v, 'ts', s(ts))
redis.call('PEXPIRE', K, s(math.max(1, reset)))
return {ok and 1 or 0, L - u, reset, retry}
