-- rlaas forget: records deleted (the console's reset and unban). KEYS are
-- the records; no arguments. Reply {1, 1 if it was there, 0, 0} each.
if #KEYS < 1 or #KEYS > 8 then
  return redis.error_reply('ERR rlaas: 1 to 8 keys')
end
local out = {}
for i = 1, #KEYS do
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = 1, redis.call('DEL', KEYS[i]), 0, 0
end
return out
