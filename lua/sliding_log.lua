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
  if string.find(e, ':', 1, true) then
    local T, u, C = string.match(e, '^%d+%-(%d+):(%d+):(%d+)$')
    if T then return 1, tonumber(T), tonumber(u), tonumber(C) end
  elseif string.byte(e, 17) == 45 then
    local T, u = string.match(e, '^(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d)%-(%d+)$')
    if T then return 2, tonumber(T), tonumber(u) end
  end
end
-- from rank i towards j (at most max members): the first of ours {e (the
-- member), r (its rank), k, T, u, C}, or nil. The first member alone
-- (most logs are ours alone), then growing steps: work in proportion to
-- the members passed
local function log_scan(K, i, j, max)
  local d, left = i <= j and 1 or -1, math.min(math.abs(j - i) + 1, max or math.huge)
  local step = 1
  while left > 0 do
    step = math.min(step, left)
    local a = math.min(i, i + d * (step - 1))
    local e = redis.call('ZRANGE', K, a, a + step - 1)
    for y = 1, step do
      local z = d > 0 and y or step - y + 1
      local k, T, u, C = log_kind(e[z])
      if k then
        return {e = e[z], r = i + d * (y - 1), k = k, T = T, u = u, C = C}
      end
    end
    i, left = i + d * step, left - step
    step = math.min(step == 1 and LOG_SCAN - 1 or 4 * step, LOG_CHUNK)
  end
end
-- the rarer helpers, made only when needed: a script makes its
-- functions anew on every call
local function log_slow()
  -- f(member, rank, score) on ranks i..j, until true; LOG_CHUNK at a time,
  -- or growing steps without the scores (grow)
  local function log_walk(K, i, j, f, grow)
    local n = grow and 1 or LOG_CHUNK
    while i <= j do
      local k, e = math.min(j, i + n - 1), nil
      if grow then e = redis.call('ZRANGE', K, i, k)
      else e = redis.call('ZRANGE', K, i, k, 'WITHSCORES') end
      local w = grow and 1 or 2
      for x = 1, #e, w do
        if f(e[x], i + (x - 1) / w, tonumber(e[x + 1])) then return end
      end
      i, n = k + 1, grow and math.min(4 * n, LOG_CHUNK) or n
    end
  end
  -- how many of ours lie in ranks a.r..x.r (a the oldest live, b the newest,
  -- x between): by C in the new layout. The layout before has no C: its
  -- members lie below the new ones (c the first), found by bisection; a
  -- foreign one among them would be taken for ours (one unit short, until
  -- it leaves). Nil: the log does not add up
  local function log_mine(K, a, b)
    if a.k == 1 then
      return b.k == 1 and function(x) return x.C and x.C - a.C + 1 or x.r - a.r + 1 end
    end
    local old = function(x) return x.r - a.r + 1 end
    if b.k == 2 then return old end
    local lo, hi, c = a.r + 1, b.r - 1, b
    while lo <= hi do
      local mid = math.floor((lo + hi) / 2)
      local q = log_scan(K, mid, hi)
      if q and q.k == 2 then lo = q.r + 1 else
        c, hi = q or c, mid - 1
      end
    end
    local d = log_scan(K, c.r - 1, a.r)
    return d.k == 2 and function(x) return x.k == 2 and old(x) or old(d) + x.C - c.C + 1 end
  end
  -- the first rank j with e units or more in r0..j (used in r0..r1, n
  -- members): by bisection, P(x) the units up to x, one of ours; foreign
  -- members count one each. Each member is a unit or more, and all but
  -- used - n units are one a member: j is within used - n ranks of r0 + e - 1
  local function log_first(K, r0, r1, n, used, e, P)
    local lo, hi = math.max(r0, r0 + e - 1 - (used - n)), math.min(r1, r0 + e - 1)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local q = log_scan(K, mid, r1)
      -- mid..at foreign, Pa units up to at
      local at, Pa = r1, used
      if q then at, Pa = q.r - 1, P(q) - q.u end
      if q and Pa < e then
        if Pa + q.u >= e then return q.r end
        lo = q.r + 1
      else
        local Pm = Pa - (at - mid + 1)
        if Pm < e then return at - (Pa - e) end
        hi = mid - 1
      end
    end
    return lo
  end
  -- the clock rule: ours stamped over W ahead (the clock went back) are no
  -- state, all of ours then; a foreign member is its own: kept, not counted
  -- beyond W. Ours alone go with the key; else each, once. New card, ahead
  local function log_ahead(K, card, hi)
    local a = redis.call('ZCOUNT', K, '(' .. s(hi), '+inf')
    local b = log_scan(K, card - 1, 0)
    if not b or b.r < card - a then return card, a end
    if b.k == 1 and b.r == card - 1 then
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
  -- r0..r1, member by member: a log that does not add up (edited by hand)
  local function log_count(K, r0, r1)
    local c = {used = 0, f = 0}
    log_walk(K, r0, r1, function(e, _, t)
      local k, T, u, C = log_kind(e)
      if not k then c.f, u = c.f + 1, 1 end
      if k then c.T, c.C, c.t = T, C, t end
      c.used = c.used + u
    end)
    return c
  end
  -- totals stay exact below 2^53: far before, our live members start again
  -- at 0, the layout before rewritten too (the others are left). New T, C
  local function log_rebase(K, r0, r1)
    local all = {}
    log_walk(K, r0, r1, function(e, _, t)
      local k, T, u = log_kind(e)
      if k then all[#all + 1] = {e, t, T, u} end
    end)
    if #all == 0 then return 0, 0 end
    local T0 = all[1][3] - all[1][4]
    for C, x in ipairs(all) do
      redis.call('ZREM', K, x[1])
      local t = s(x[2])
      redis.call('ZADD', K, t, t .. '-' .. string.format('%016d:%d:%d', x[3] - T0, x[4], C))
    end
    return all[#all][3] - T0, #all
  end
  return {walk = log_walk, mine = log_mine, first = log_first, ahead = log_ahead,
    count = log_count, rebase = log_rebase}
end
local function rlaas_sliding_log(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local lo = now - W
  local card, ahead, top, z = redis.call('ZCARD', K), 0, nil, nil
  if card > 0 then
    z = redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')
    top = tonumber(z[2])
    if not clock(top, W) then card, ahead, top = log_slow().ahead(K, card, now + W) end
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
  -- our newest member (T, C go on from it): live, else dead close below;
  -- our oldest live one. Our units in the window are a difference of T,
  -- our members of C; the foreign ones the rest of n
  local seq, cnt, mark, base, f, used, walk = 0, 0, nil, 0, 0, 0, false
  local a, b, mine, slow
  if n > 0 and top then
    -- the key's newest is at r1 (none ahead)
    local k, T, u, C = log_kind(z[1])
    if k then b = {e = z[1], r = r1, k = k, T = T, u = u, C = C} end
  end
  if n > 0 and not b then b = log_scan(K, r1, r0) end
  if not b and r0 > 0 then b = log_scan(K, r0 - 1, 0, LOG_SCAN) end
  if b then seq, cnt = b.T, b.C or 0 end
  base = seq
  -- the newest live score: the key's newest, unless ahead
  if n == 0 then top = nil
  elseif not top then top = tonumber(redis.call('ZRANGE', K, r1, r1, 'WITHSCORES')[2]) end
  if b and b.r >= r0 then
    mark = b.r == r1 and top or tonumber(redis.call('ZSCORE', K, b.e))
    a = b
    if b.r > r0 then
      -- the oldest live member is ours, most often
      local x = redis.call('ZRANGE', K, r0, r0)[1]
      local k, T, u, C = log_kind(x)
      a = k and {e = x, r = r0, k = k, T = T, u = u, C = C} or log_scan(K, r0 + 1, b.r)
    end
    local k = a.k == 1 and b.k == 1 and b.C - a.C + 1
    if not k then
      slow = log_slow()
      mine = slow.mine(K, a, b)
      k = mine and mine(b) or 0
    end
    used, base = b.T - a.T + a.u, a.T - a.u
    walk = k < 1 or k > b.r - a.r + 1 or used < k
    f = n - k
    used = used + f
    if walk then
      slow = slow or log_slow()
      local c = slow.count(K, r0, r1)
      used, f, mark = c.used, c.f, c.t
      if c.C then seq, cnt = c.T, c.C end
    end
  elseif n > 0 then
    f, used = n, n
  end
  local ok = used + need <= L
  if charges(ok, commit, cost, m) then
    if seq + cost > 4503599627370496 then
      slow = slow or log_slow()
      seq, cnt = slow.rebase(K, r0, r1)
      base, walk, a = seq - (used - f), false, nil
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
    elseif a and not walk and e > LOG_SCAN then
      -- up to one of ours x: its rank, less ours there, plus our units (T)
      slow = slow or log_slow()
      mine = mine or slow.mine(K, a, b)
      j = slow.first(K, r0, r1, n, used, e,
        function(x) return x.r - r0 + 1 - mine(x) + x.T - base end)
    else
      -- e units or more in at most e members
      local u = 0
      slow = slow or log_slow()
      slow.walk(K, r0, r1, function(x, r)
        local k, _, v = log_kind(x)
        u, j = u + (k and v or 1), r
        return u >= e
      end, true)
    end
    retry = math.max(1, tonumber(redis.call('ZRANGE', K, j, j, 'WITHSCORES')[2]) + W - now)
  end
  return {ok and 1 or 0, rem, reset, retry}
end
-- a credit: t of our live units back (never a foreign member's), off our
-- hits from at on when at most LOG_CHUNK members follow at and ours there
-- hold t (those after renumbered: T less the units gone, C less the
-- members gone), else off our newest (nothing after them to renumber).
-- The layout before: nothing given
local function rlaas_sliding_log_credit(K, L, W, n, m, at)
  local z = redis.call('ZCARD', K)
  local r0 = z - redis.call('ZCOUNT', K, '(' .. s(now - W), '+inf')
  if r0 >= z then return 0 end
  local b = log_scan(K, z - 1, r0)
  if not b or b.k ~= 1 then return 0 end
  local top = tonumber(redis.call('ZRANGE', K, -1, -1, 'WITHSCORES')[2])
  if not clock(top, W) then return 0 end
  local a = log_scan(K, r0, b.r)
  if a.k ~= 1 then return 0 end
  local t = math.min(n, b.T - a.T + a.u)
  if t <= 0 then return 0 end
  local ra = z - redis.call('ZCOUNT', K, s(math.max(at, now - W + 1)), '+inf')
  local all, d = nil, 0
  if z - ra <= LOG_CHUNK then
    all = redis.call('ZRANGE', K, ra, -1, 'WITHSCORES')
    local x
    for j = 1, #all, 2 do
      local k, T, u = log_kind(all[j])
      if k and k ~= 1 then return 0 end
      if k and not x then x = b.T - T + u end
    end
    if not x or x < t then all = nil end
  end
  if not all then
    -- the newest: from the end, until t units of ours (a bounded walk)
    all, d = {}, 1
    local i, u = z - 1, 0
    while u < t and i >= r0 and #all < 4 * LOG_CHUNK do
      local e = redis.call('ZRANGE', K, math.max(r0, i - LOG_CHUNK + 1), i, 'WITHSCORES')
      for j = #e - 1, 1, -2 do
        local k, _, v = log_kind(e[j])
        if k and k ~= 1 then return 0 end
        if k and u < t then u = u + v; all[#all + 1] = e[j]; all[#all + 1] = e[j + 1] end
      end
      i = i - LOG_CHUNK
    end
    t = math.min(t, u)
  end
  -- in order (oldest first from at; newest first with d): units gone so
  -- far (g) and members gone (c) come off the ones after; from the newest,
  -- a member keeps what the ones after it lost
  local left, g, c, put = t, 0, 0, {}
  for j = 1, #all - 1, 2 do
    local k, T, u, C = log_kind(all[j])
    if k then
      local x = math.min(u, left)
      left, g = left - x, g + x
      if x > 0 or g > 0 then
        redis.call('ZREM', K, all[j])
        if u > x then
          put[#put + 1] = {all[j + 1], T - (d == 1 and x or g), u - x, d == 1 and C or C - c}
        else c = c + 1 end
      end
    end
  end
  for _, p in ipairs(put) do
    redis.call('ZADD', K, p[1], p[1] .. '-' .. string.format('%016d:%d:%d', p[2], p[3], p[4]))
  end
  return t
end
