-- rlaas fixed window (seed 001): STRING K..<floor(now/W)> (K ends in ':'),
-- units charged; the clock rule holds by the name: only now's is read
local function rlaas_fixed(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local idx = math.floor(now / W)
  local key = K .. s(idx)
  if string.sub(K, -1) ~= ':' then
    -- Redis Cluster: the module declared the window's key (K ends in its
    -- number) so that a moving slot moves it too; if Redis reckons another
    -- window, nothing is written and the module calls again for Redis' time
    key = K
    if string.match(K, ':(%d+)$') ~= s(idx) then
      return redis.error_reply('RLAASWINDOW ' .. s(idx) .. ' ' .. s(now))
    end
  end
  local n = tonumber(redis.call('GET', key)) or 0
  local ok = n + need <= L
  if charges(ok, commit, cost, m) then
    n = redis.call('INCRBY', key, cost)
    if n == cost then redis.call('PEXPIRE', key, s(W)) end
  end
  -- the quota comes back when the bucket ends
  local left = (idx + 1) * W - now
  local rem = math.max(0, L - n)
  local reset, retry = 0, 0
  if n > 0 then reset = left end
  if rem < need then retry = left end
  return {ok and 1 or 0, rem, reset, retry}
end
-- a credit (lua/credit.lua): n units back to the window of at if it is
-- now's (one that is over no longer limits); a count back to 0 is no key
local function rlaas_fixed_credit(K, L, W, n, m, at)
  local idx = math.floor(at / W)
  local key = K .. s(idx)
  if string.sub(K, -1) ~= ':' then
    -- Redis Cluster: the key declares the charge's window
    if string.match(K, ':(%d+)$') ~= s(idx) then return 0 end
    key = K
  end
  if idx ~= math.floor(now / W) then return 0 end
  local v = tonumber(redis.call('GET', key))
  if not v or v < 1 or v >= 2^53 or v % 1 ~= 0 then return 0 end
  local g = math.min(n, v)
  if g == v then redis.call('DEL', key) else redis.call('DECRBY', key, g) end
  return g
end
