-- rlaas sliding log (seeds 000/003): ZSET K, a member per allowed hit
-- the clock rule on the newest hit: more than W ahead, the log is no state
local top = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
if top[2] and not clock(tonumber(top[2])) then redis.call('UNLINK', K) end
-- a hit at score x counts while x > now - W
redis.call('ZREMRANGEBYSCORE', K, '-inf', s(now - W))
local n = redis.call('ZCARD', K)
local ok = n < L
if ok then
  -- math.random may repeat (old Redis): probe until NX adds
  local base = s(now) .. '-' .. math.random()
  local m, k = base, n
  while redis.call('ZADD', K, 'NX', s(now), m) == 0 do
    k = k + 1
    m = base .. '-' .. k
  end
  n = n + 1
end
local rem = math.max(0, L - n)
-- empty when the newest hit leaves
top = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
local reset = math.max(0, math.ceil(tonumber(top[2]) + W - now))
local retry = 0
if n >= L then
  -- a hit fits once hit n-L (0-based) has left
  local e = redis.call('ZRANGE', K, n - L, n - L, 'WITHSCORES')
  retry = math.max(1, math.ceil(tonumber(e[2]) + W - now))
end
-- 2*W (seeds); longer if the clock went back
redis.call('PEXPIRE', K, s(math.max(2 * W, reset)))
return {ok and 1 or 0, rem, reset, retry}
