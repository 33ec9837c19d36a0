-- rlaas sliding log (seeds 000/003): ZSET K, a member per charged request
-- scored by its ms. A service running the seeds' script may share K: its
-- "<ms>-<random>" members count one unit each here, and it counts ours
-- with ZCARD. Ours: "<ms>-<T>:<u>:<C>", T the units we charged so far (16
-- digits), u this request's, C our members so far. Our scores never go
-- down, so among ours ranks follow T and C: our units in the window are a
-- difference of two members, our members another, the rest of ZCOUNT the
-- seeds'. "<T, 16 digits>-<u>" is ours of the layout before (no ms)
local LOG_SCAN, LOG_CHUNK = 16, 256
-- 1, T, u, C: ours; 2, T, u: ours, the layout before; nothing: foreign
local function log_kind(e)
  local T, u, C = string.match(e, '^%d+%-(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d):(%d+):(%d+)$')
  if T then return 1, tonumber(T), tonumber(u), tonumber(C) end
  T, u = string.match(e, '^(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)%-(%d+)$')
  if T then return 2, tonumber(T), tonumber(u) end
end
local function log_units(e)
  local k, _, u = log_kind(e)
  return k and u or 1
end
-- f(member, score, rank) on ranks i..j, LOG_CHUNK at a time, until true
local function log_walk(K, i, j, f)
  while i <= j do
    local e = redis.call('ZRANGE', K, i, math.min(j, i + LOG_CHUNK - 1), 'WITHSCORES')
    for x = 1, #e, 2 do
      if f(e[x], tonumber(e[x + 1]), i + (x - 1) / 2) then return end
    end
    i = i + LOG_CHUNK
  end
end
-- from rank i towards j, at most LOG_SCAN members (the first alone first:
-- most logs are ours alone): the first of ours {r, t, k, T, u, C} or nil;
-- how many were looked at; the score at i
local function log_scan(K, i, j)
  local d, left = i <= j and 1 or -1, math.abs(j - i) + 1
  local seen, first, x = 0, nil, i
  for _, step in ipairs({1, LOG_SCAN - 1}) do
    step = math.min(step, left - seen)
    if step < 1 then break end
    local a = math.min(x, x + d * (step - 1))
    local e = redis.call('ZRANGE', K, a, a + step - 1, 'WITHSCORES')
    for y = 1, step do
      local z = d > 0 and 2 * y - 1 or 2 * (step - y) + 1
      first = first or tonumber(e[z + 1])
      local k, T, u, C = log_kind(e[z])
      if k then
        return {r = x + d * (y - 1), t = tonumber(e[z + 1]), k = k, T = T, u = u, C = C}, seen + y, first
      end
    end
    seen, x = seen + step, x + d * step
  end
  return nil, seen, first
end
-- the clock rule: ours stamped over W ahead (the clock went back) are no
-- state, all of ours then; a foreign member is its own: kept, not counted
-- beyond W. Ours alone go with the key; else each, once. New card, ahead
local function log_ahead(K, card, hi)
  local a = redis.call('ZCOUNT', K, '(' .. s(hi), '+inf')
  local b, seen = log_scan(K, card - 1, 0)
  if b and b.t <= hi or not b and seen >= a then return card, a end
  if not b then
    local stale = false
    log_walk(K, card - a, card - 1, function(e) stale = log_kind(e) ~= nil return stale end)
    if not stale then return card, a end
  elseif b.k == 1 and b.r == card - 1 then
    local k, _, _, C = log_kind(redis.call('ZRANGE', K, 0, 0)[1])
    if k == 1 and b.C - C + 1 == card then
      redis.call('UNLINK', K)
      return 0, 0
    end
  end
  local gone = {}
  log_walk(K, 0, card - 1, function(e) if log_kind(e) then gone[#gone + 1] = e end end)
  for i = 1, #gone, LOG_CHUNK do
    redis.call('ZREM', K, unpack(gone, i, math.min(#gone, i + LOG_CHUNK - 1)))
  end
  return card - #gone, redis.call('ZCOUNT', K, '(' .. s(hi), '+inf')
end
-- our units, the foreign members and our newest T, C and stamp in ranks
-- r0..r1, member by member: a log mixed past the scans' reach, or with
-- members of the layout before
local function log_count(K, r0, r1)
  local c = {used = 0, f = 0}
  log_walk(K, r0, r1, function(e, t)
    local k, T, u, C = log_kind(e)
    if not k then c.f, u = c.f + 1, 1 end
    if k == 1 then c.T, c.C = T, C end
    if k then c.t = t end
    c.used = c.used + u
  end)
  return c
end
-- totals stay exact below 2^53: far before, our live members start again
-- at 0 (the others are left). New T, C of the newest
local function log_rebase(K, r0, r1)
  local all = {}
  log_walk(K, r0, r1, function(e, t)
    local k, T, u, C = log_kind(e)
    if k == 1 then all[#all + 1] = {e, t, T, u, C} end
  end)
  if #all == 0 then return 0, 0 end
  local T0, C0 = all[1][3] - all[1][4], all[1][5] - 1
  for _, x in ipairs(all) do
    redis.call('ZREM', K, x[1])
    redis.call('ZADD', K, s(x[2]), s(x[2]) .. '-' .. string.format('%016d:%d:%d', x[3] - T0, x[4], x[5] - C0))
  end
  return all[#all][3] - T0, all[#all][5] - C0
end
local function rlaas_sliding_log(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local lo = now - W
  local card, ahead = redis.call('ZCARD', K), 0
  if card > 0 and not clock(tonumber(redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')[2]), W) then
    card, ahead = log_ahead(K, card, now + W)
  end
  -- a hit at score x is in the window while now - W < x <= now + W. Work
  -- per call is bounded: the live ones are counted (ZCOUNT), at most 256 of
  -- the oldest dead ones go; the rest go in later calls, or with the key
  local n = card > 0 and redis.call('ZCOUNT', K, '(' .. s(lo), s(now + W)) or 0
  local dead = card - ahead - n
  if dead > 0 then
    local k = math.min(dead, 256)
    redis.call('ZREMRANGEBYRANK', K, 0, k - 1)
    dead = dead - k
  end
  local r0, r1 = dead, dead + n - 1
  -- our newest member, live or not; the oldest live one; the foreign ones
  -- are the live ones that are not ours. Past the scans' reach: one by one
  local seq, cnt, mark, top, base, f, used, walk = 0, 0, nil, nil, 0, 0, 0, false
  if r1 >= 0 then
    local b, seen
    b, seen, top = log_scan(K, r1, 0)
    if b and b.k == 1 then seq, cnt = b.T, b.C end
    base = seq
    if n == 0 then
      top = nil
    elseif b and b.t > lo then
      mark = b.t
      local a = log_scan(K, r0, b.r)
      walk = not a or a.k ~= 1 or b.k ~= 1
      if not walk then
        local mine = b.C - a.C + 1
        used = b.T - a.T + a.u
        walk = mine < 1 or mine > b.r - a.r + 1 or used < mine
        f, base = n - mine, a.T - a.u
        used = used + f
      end
    elseif b or seen >= n then
      f, used = n, n
    else
      walk = true
    end
    if walk then
      local c = log_count(K, r0, r1)
      used, f, mark = c.used, c.f, c.t
      if c.T then seq, cnt = c.T, c.C end
    end
  end
  local ok = used + need <= L
  if charges(ok, commit, cost, m) then
    if seq + cost > 4503599627370496 then
      seq, cnt = log_rebase(K, r0, r1)
      base = seq - (used - f)
    end
    mark = math.max(now, mark or now)
    seq, cnt, used, n, r1 = seq + cost, cnt + 1, used + cost, n + 1, r1 + 1
    redis.call('ZADD', K, s(mark), s(mark) .. '-' .. string.format('%016d:%d:%d', seq, cost, cnt))
    top = math.max(top or mark, mark)
    -- 2*W (seeds); longer if the clock went back
    redis.call('PEXPIRE', K, s(math.max(2 * W, mark + W - now)))
  end
  local rem = math.max(0, L - used)
  -- empty when the newest hit leaves
  local reset = 0
  if top and used > 0 then reset = math.max(0, top + W - now) end
  local retry = 0
  if rem < need then
    -- fits once the units up to the live hit j are e or more
    local e, j = used + need - L, r0
    if used == n then
      -- every live hit one unit: its rank follows
      j = r0 + e - 1
    elseif f == 0 and not walk then
      -- ours alone: by T, the first with T >= base + e
      local hi = r1
      while j < hi do
        local mid = math.floor((j + hi) / 2)
        local _, T = log_kind(redis.call('ZRANGE', K, mid, mid)[1])
        if (T or 0) >= base + e then hi = mid else j = mid + 1 end
      end
    else
      local u = 0
      log_walk(K, r0, r1, function(x, _, r)
        u, j = u + log_units(x), r
        return u >= e
      end)
    end
    retry = math.max(1, tonumber(redis.call('ZRANGE', K, j, j, 'WITHSCORES')[2]) + W - now)
  end
  return {ok and 1 or 0, rem, reset, retry}
end
