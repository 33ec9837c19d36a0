-- rlaas fixed window (seed 001): STRING K..<floor(now/W)>, INCR (K ends in ':')
-- the clock rule holds by the key's name: only now's window is read
local idx = math.floor(now / W)
local key = K .. s(idx)
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
