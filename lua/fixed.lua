-- rlaas fixed window (seed 001): STRING K..<floor(now/W)> (K ends in ':')
-- or, W a calendar, K..<tag>+<start>; units charged; only now's is read
local function span(W, at)
  if type(W) ~= 'table' then
    local idx = math.floor(at / W)
    return idx * W, (idx + 1) * W, s(idx)
  end
  for i = 1, 3 do
    if at >= W[i] and at < W[i + 1] then
      return W[i], W[i + 1], W.tag .. '+' .. s(W[i])
    end
  end
end
-- at's window: key, start, end; else nil, its name
local function window(K, W, at)
  local from, to, name = span(W, at)
  if not from then return nil, '-' end
  if string.sub(K, -1) == ':' then return K .. name, from, to end
  -- Cluster: K names it, else the module calls again
  if string.sub(K, -#name - 1) == ':' .. name then return K, from, to end
  return nil, name
end
local function rlaas_fixed(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local key, from, to = window(K, W, now)
  if not key then
    return redis.error_reply('RLAASWINDOW ' .. from .. ' ' .. s(now))
  end
  local n = tonumber(redis.call('GET', key)) or 0
  local ok = n + need <= L
  -- a forced charge stops at 2^52
  local c = math.min(cost, math.max(0, 2^52 - n))
  if charges(ok, commit, c, m) then
    n = redis.call('INCRBY', key, c)
    if n == c then
      local ttl = W
      if type(W) == 'table' then ttl = to - now end
      redis.call('PEXPIRE', key, s(ttl))
    end
  end
  local left = to - now
  local rem = math.max(0, L - n)
  local reset, retry = 0, 0
  if n > 0 then reset = left end
  if rem < need then retry = left end
  return {ok and 1 or 0, rem, reset, retry}
end
-- a credit (lua/credit.lua): n units back to the window of at if it is
-- now's (one that is over no longer limits); a count back to 0 is no key
local function rlaas_fixed_credit(K, L, W, n, m, at)
  local key, from = window(K, W, at)
  if not key or from ~= span(W, now) then return 0 end
  local v = tonumber(redis.call('GET', key))
  if not v or v < 1 or v >= 2^53 or v % 1 ~= 0 then return 0 end
  local g = math.min(n, v)
  if g == v then redis.call('DEL', key) else redis.call('DECRBY', key, g) end
  return g
end
BIG[rlaas_fixed], CAL[rlaas_fixed] = true, true
BIG[rlaas_fixed_credit], CAL[rlaas_fixed_credit] = true, true
