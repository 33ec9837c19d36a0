-- rlaas: this prelude + a strategy's body. KEYS[1]=K, the whole key built
-- in C; ARGV[1]=limit ARGV[2]=window ms; reply {ok, remaining, reset, retry}
if redis.replicate_commands then redis.replicate_commands() end
local K, L, W = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
if not (L and W and L >= 1 and W >= 1 and L <= 1e9 and W <= 2^35
    and L % 1 == 0 and W % 1 == 0) then
  return redis.error_reply('ERR rlaas: bad limit or window')
end
local t = redis.call('TIME') -- rlaas:clock
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function s(x) return string.format('%d', x) end
-- exact a*b = q*m + x, 0 <= x < m, for a, m < 2^36, b and q < 2^53: directly
-- while a*b < 2^52 (q then off by one at most), else 16-bit long multiplication
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
-- clock gone back: state stamped over a window ahead is none (nil); up to a
-- window ahead it is held, time standing at its stamp
local function clock(ts)
  if ts > now + W then return nil end
  return math.max(ts, now)
end
