-- rlaas token bucket: HASH K (ends in :tb) {tokens, ts}
-- ticks: a token is c ticks, refill is r ticks per ms, full after W ms
local g = gcd(L, W)
local c, r = W / g, L / g
-- level = n tokens + f ticks (0 <= f < c); missing key: full
local n, f, ts = L, 0, now
local h = redis.call('HMGET', K, 'tokens', 'ts')
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
  -- held (clock went back): no refill, time stays at the stamp
  local dt = at - ots
  ts = at
  if dt >= W then
    n, f = L, 0
  else
    local dq, dx = muldiv(dt, r, c)
    n, f = n + dq, f + dx
    if f >= c then n, f = n + 1, f - c end
  end
  if n >= L then n, f = L, 0 end
end
local ok = n >= 1
if ok then n = n - 1 end
local off = ts - now
-- until full: ceil(((L - n) * c - f) / r)
local q, x = muldiv(L - n, c, r)
local reset = off + q + math.ceil((x - f) / r)
local retry = 0
if n < 1 then retry = off + math.ceil((c - f) / r) end
if L * c < 2^53 then v = s(n * c + f) else v = s(n) .. ':' .. s(f) end
redis.call('HMSET', K, 'tokens', v, 'ts', s(ts))
redis.call('PEXPIRE', K, s(math.max(1, reset)))
return {ok and 1 or 0, n, reset, retry}
