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
