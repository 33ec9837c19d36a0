-- rlaas release: concurrency slots given back. KEYS[i] ends in ":conc",
-- ARGV[i] is its token. Reply {1, 1 if it was held, 0, 0} each.
if #KEYS < 1 or #KEYS > 8 or #ARGV < #KEYS then
  return redis.error_reply('ERR rlaas: 1 to 8 keys, a token each')
end
for i = 1, #KEYS do
  if string.sub(KEYS[i], -5) ~= ':conc' or #ARGV[i] ~= 16 or not string.match(ARGV[i], '^[0-9a-f]+$') then
    return redis.error_reply('ERR rlaas: bad release ' .. i)
  end
end
local out = {}
for i = 1, #KEYS do
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = 1, redis.call('ZREM', KEYS[i], ARGV[i]), 0, 0
end
return out
