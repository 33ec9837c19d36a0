-- rlaas token bucket: HASH K:tb {tokens, ts}
-- KEYS[1]=K ARGV[1]=limit ARGV[2]=window ms
-- reply {allowed, remaining, reset_ms, retry_ms}
if redis.replicate_commands then redis.replicate_commands() end
local K, L, W = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
if not (L and W and L >= 1 and W >= 1 and L <= 1e9 and W <= 2^35
    and L % 1 == 0 and W % 1 == 0) then
  return redis.error_reply('ERR rlaas: bad limit or window')
end
local t = redis.call('TIME') -- rlaas:clock
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function s(x) return string.format('%d', x) end
-- exact a*b = q*m + x, 0 <= x < m, for a, m < 2^36, b and q < 2^53:
-- directly while a*b < 2^52 (then q is off by at most one before the
-- correction), else by 16-bit long multiplication
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

-- ticks: a token is c ticks, refill is r ticks per ms, full after W ms
local g = gcd(L, W)
local c, r = W / g, L / g
local key = K .. ':tb'
-- level = n tokens + f ticks (0 <= f < c); missing key: full
local n, f, ts = L, 0, now
local h = redis.call('HMGET', key, 'tokens', 'ts')
local v, ots = h[1], tonumber(h[2])
if ots then ots = math.floor(ots) end
if v and ots then
  local a, b = string.match(v, '^(%d+):(%d+)$')
  if a then n, f = tonumber(a), tonumber(b)
  elseif tonumber(v) then
    v = math.max(0, math.floor(tonumber(v)))
    n = math.floor(v / c)
    f = v - n * c
  end
  if f >= c then f = c - 1 end
  local dt = now - ots
  if dt < 0 then
    ts = ots  -- clock went back: no refill, keep the stored time
  elseif dt >= W then
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
redis.call('HMSET', key, 'tokens', v, 'ts', s(ts))
redis.call('PEXPIRE', key, s(math.max(1, reset)))
return {ok and 1 or 0, n, reset, retry}
