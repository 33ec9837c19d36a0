-- rlaas sliding log (seeds 000/003): ZSET K, a member per allowed hit
-- the clock rule on the newest hit: more than W ahead, the log is no state
local top = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
if top[2] and not clock(tonumber(top[2])) then
  redis.call('UNLINK', K)
  top = {}
end
-- a hit at score x counts while x > now - W. Work per call is bounded: the
-- live ones are counted (ZCOUNT), at most 256 of the oldest dead ones go;
-- the rest go in later calls, or with the key
local n = redis.call('ZCOUNT', K, '(' .. s(now - W), '+inf')
local dead = redis.call('ZCARD', K) - n
if dead > 0 then
  local k = math.min(dead, 256)
  redis.call('ZREMRANGEBYRANK', K, 0, k - 1)
  dead = dead - k
end
local ok = n < L
local newest = tonumber(top[2])
if ok then
  -- math.random may repeat (old Redis): probe until NX adds
  local base = s(now) .. '-' .. math.random()
  local m, k = base, n
  while redis.call('ZADD', K, 'NX', s(now), m) == 0 do
    k = k + 1
    m = base .. '-' .. k
  end
  n = n + 1
  if not newest or newest < now then newest = now end
end
local rem = math.max(0, L - n)
-- empty when the newest hit leaves
local reset = math.max(0, math.ceil(newest + W - now))
local retry = 0
if n >= L then
  -- a hit fits once live hit n-L (0-based) has left; dead ones rank first
  local i = dead + n - L
  local e = redis.call('ZRANGE', K, i, i, 'WITHSCORES')
  retry = math.max(1, math.ceil(tonumber(e[2]) + W - now))
end
-- 2*W (seeds); longer if the clock went back
redis.call('PEXPIRE', K, s(math.max(2 * W, reset)))
return {ok and 1 or 0, rem, reset, retry}
