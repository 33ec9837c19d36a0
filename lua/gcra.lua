-- rlaas GCRA: STRING K:gcra = theoretical arrival time (TAT)
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

-- ticks: r per ms; emission interval T = c ticks; tolerance (L-1)*c
-- times are (ms, ticks) pairs with 0 <= ticks < r
local g = gcd(L, W)
local c, r = W / g, L / g
local Ta, Tb = math.floor(c / r), c % r
local ua, ub = muldiv(L - 1, c, r)
local key = K .. ':gcra'
local a, b = now, 0
local v = redis.call('GET', key)
if v then
  local x, y = string.match(v, '^(%d+):(%d+)$')
  if x then
    x, y = tonumber(x), math.min(tonumber(y), r - 1)
  else
    x = tonumber(v)
    if x and x % 1 == 0 then y = x % r; x = (x - y) / r else x = nil end
  end
  -- past TAT: full bucket; later than a day past now + W: not written
  -- by this limit/window (the tick size changed), start afresh
  if x and x >= now and x <= now + W + 86400000 then a, b = x, y end
end
-- allowed iff TAT - now <= tolerance
local ok = a - now < ua or (a - now == ua and b <= ub)
if ok then
  a, b = a + Ta, b + Tb
  if b >= r then a, b = a + 1, b - r end
end
local da = a - now
-- remaining = L - ceil((TAT - now) / T)
local rem = 0
if da <= W then
  local q, x = muldiv(da, r, c)
  rem = math.max(0, L - q - math.ceil((x + b) / c))
end
local reset = da + (b > 0 and 1 or 0)
local retry = 0
if rem == 0 then retry = da - ua + (b > ub and 1 or 0) end
if a <= math.floor((2^53 - r) / r) then v = s(a * r + b) else v = s(a) .. ':' .. s(b) end
redis.call('SET', key, v, 'PX', s(math.max(1, reset)))
return {ok and 1 or 0, rem, reset, retry}
