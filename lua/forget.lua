-- rlaas forget: records deleted (the console's reset and unban). KEYS are
-- the records; ARGV[1] (optional) '1': each leaves a mark K:forgot (its
-- time, for a day) that lua/lease.lua reads, so that units a server held
-- before the reset are not given back into the state that starts afresh
-- (on a Cluster too: K's hash tag puts the mark in K's slot).
-- Reply {1, 1 if it was there, 0, 0} each.
if #KEYS < 1 or #KEYS > 8 then
  return redis.error_reply('ERR rlaas: 1 to 8 keys')
end
local mark = ARGV[1] == '1'
local t = redis.call('TIME') -- rlaas:clock
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #KEYS do
  -- the mark first: a script stopped between the two (a Cluster slot
  -- moving, the mark's key not declared) leaves a mark without a reset,
  -- which only refuses give-backs, never a reset without its mark
  if mark then
    redis.call('SET', KEYS[i] .. ':forgot', now, 'PX', 86400000)
  end
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = 1, redis.call('DEL', KEYS[i]), 0, 0
end
return out
