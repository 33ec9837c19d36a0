-- rlaas sliding log (seeds 000/003): ZSET K, a member per charged request,
-- "<units charged so far, 16 digits>-<its units>" scored by its ms. Scores
-- never go down, so ranks follow both time and the running total, and the
-- units in the window are a difference of two members
local function cum(e)
  local a, u = string.match(e or '', '^(%d+)-(%d+)$')
  return tonumber(a), tonumber(u)
end
local function rlaas_sliding_log(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local top = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
  local seq = cum(top[1])
  -- the clock rule on the newest hit: more than W ahead, the log is no
  -- state; so is a log of another layout
  if top[2] and not (seq and clock(tonumber(top[2]), W)) then
    redis.call('UNLINK', K)
    top, seq = {}, nil
  end
  seq = seq or 0
  local newest = tonumber(top[2])
  -- a hit at score x is in the window while x > now - W. Work per call is
  -- bounded: the live ones are counted (ZCOUNT), at most 256 of the
  -- oldest dead ones go; the rest go in later calls, or with the key
  local n = redis.call('ZCOUNT', K, '(' .. s(now - W), '+inf')
  local dead = redis.call('ZCARD', K) - n
  if dead > 0 then
    local k = math.min(dead, 256)
    redis.call('ZREMRANGEBYRANK', K, 0, k - 1)
    dead = dead - k
  end
  -- the total before the oldest live hit
  local base = seq
  if n > 0 then
    local a, u = cum(redis.call('ZRANGE', K, dead, dead)[1])
    base = a and a - u or seq - n
  end
  local used = seq - base
  local ok = used + need <= L
  if charges(ok, commit, cost, m) then
    -- totals stay exact below 2^53: far before, restart them at 0
    if seq + cost > 4503599627370496 then
      local all = redis.call('ZRANGE', K, dead, -1, 'WITHSCORES')
      redis.call('DEL', K)
      for j = 1, #all, 2 do
        local a, u = cum(all[j])
        redis.call('ZADD', K, all[j + 1], string.format('%016d-%d', a - base, u))
      end
      seq, base, dead = seq - base, 0, 0
    end
    newest = math.max(now, newest or now)
    seq, used, n = seq + cost, used + cost, n + 1
    redis.call('ZADD', K, s(newest), string.format('%016d-%d', seq, cost))
    -- 2*W (seeds); longer if the clock went back
    redis.call('PEXPIRE', K, s(math.max(2 * W, newest + W - now)))
  end
  local rem = math.max(0, L - used)
  -- empty when the newest hit leaves
  local reset = 0
  if newest and used > 0 then reset = math.max(0, newest + W - now) end
  local retry = 0
  if rem < need then
    -- fits once the first live hit j with total(j) >= seq - L + need left
    local goal = seq - L + need
    local lo, hi = dead, dead + n - 1
    if used == n then
      -- every live hit one unit: its rank follows
      lo = dead + goal - base - 1
      hi = lo
    end
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if (cum(redis.call('ZRANGE', K, mid, mid)[1]) or 0) >= goal then hi = mid else lo = mid + 1 end
    end
    local e = redis.call('ZRANGE', K, lo, lo, 'WITHSCORES')
    retry = math.max(1, tonumber(e[2]) + W - now)
  end
  return {ok and 1 or 0, rem, reset, retry}
end
-- a credit: units (lo, lo + t] off hits from at on, else the newest
local function rlaas_sliding_log_credit(K, L, W, n, m, at)
  local top = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
  local seq = cum(top[1])
  if not (seq and clock(tonumber(top[2]), W)) then return 0 end
  local z = redis.call('ZCARD', K)
  local d = z - redis.call('ZCOUNT', K, '(' .. s(now - W), '+inf')
  local a, u = cum(redis.call('ZRANGE', K, d, d)[1])
  if not a or d >= z then return 0 end
  local t = math.min(n, seq - a + u)
  local after = redis.call('ZCOUNT', K, s(math.max(at, now - W + 1)), '+inf')
  local r, lo, newest = z - after, nil, false
  if after > 0 and after <= 256 then
    a, u = cum(redis.call('ZRANGE', K, r, r)[1])
    if a and seq - a + u >= t then lo = a - u end
  end
  if not lo then
    lo, r, newest = seq - t, d, true
    local hi = z - 1
    while r < hi do
      local mid = math.floor((r + hi) / 2)
      if (cum(redis.call('ZRANGE', K, mid, mid)[1]) or 0) > lo then hi = mid else r = mid + 1 end
    end
  end
  local all = redis.call('ZRANGE', K, r, newest and r or -1, 'WITHSCORES')
  for j = 1, #all, 2 do
    if not cum(all[j]) then return 0 end
  end
  if newest and r + 1 < z then redis.call('ZREMRANGEBYRANK', K, r + 1, -1) end
  for j = 1, #all, 2 do
    a, u = cum(all[j])
    local gone = math.max(0, math.min(a, lo + t) - math.max(a - u, lo))
    redis.call('ZREM', K, all[j])
    if u > gone then
      redis.call('ZADD', K, all[j + 1], string.format('%016d-%d', a - math.min(math.max(a - lo, 0), t), u - gone))
    end
  end
  return t
end
