-- rlaas fixed window (seed 001): KEYS[1]=K ARGV[1]=limit ARGV[2]=window ms
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

local idx = math.floor(now / W)
local key = K .. ':' .. s(idx)
local n = redis.call('INCR', key)
if n == 1 then redis.call('PEXPIRE', key, s(W)) end
-- the quota comes back when the bucket ends
local left = (idx + 1) * W - now
local rem = math.max(0, L - n)
if n <= L then
  if rem > 0 then return {1, rem, left, 0} end
  return {1, 0, left, left}
end
return {0, 0, left, left}
