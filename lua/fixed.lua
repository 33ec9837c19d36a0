-- rlaas fixed window (seed 001): STRING K..<floor(now/W)>, INCR (K ends in ':')
-- the clock rule holds by the key's name: only now's window is read
local idx = math.floor(now / W)
local key = K .. s(idx)
if string.sub(K, -1) ~= ':' then
  -- Redis Cluster: the module declared the window's key itself (K ends in
  -- its number), so that a slot being moved moves it too; when Redis'
  -- clock reckons another window, nothing is written and the module sends
  -- the call again for that one
  key = K
  if string.match(K, ':(%d+)$') ~= s(idx) then
    return redis.error_reply('RLAASWINDOW ' .. s(idx))
  end
end
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
