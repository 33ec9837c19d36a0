-- rlaas sliding window estimate (seed 002): STRING K (ends in :sw), the
-- units charged in the previous and the current window
local SW = 16777216
-- the counts as now's window sees them: window i (now's, or the stored
-- one, time held at its start: h), e ms into it, P of i-1 and C of i
local function sw_get(K, W)
  local i = math.floor(now / W)
  local e = now - i * W
  local P, C, h = 0, 0, false
  local v = redis.call('GET', K)
  if v then
    local si, sp, sc = string.match(v, '^(%d+):(%d+):(%d+)$')
    local d
    if si then
      si, sp, sc = tonumber(si), tonumber(sp), tonumber(sc)
      d = si - i
      -- stamped at the start of window si: the clock rule
      if d > 0 and not clock(si * W, W) then d = nil end
    else
      -- packed: (prev * 2^24 + curr) * 4 + window mod 4
      local x = tonumber(v)
      if x and x >= 0 and x % 1 == 0 then
        d = (x % 4 - i % 4) % 4
        if d == 3 then d = -1 elseif d == 2 then d = nil end
        x = math.floor(x / 4)
        sp, sc = math.floor(x / SW), x % SW
      end
    end
    if d == 0 then P, C = sp, sc
    elseif d == -1 then P = sc
    elseif d and d > 0 then
      -- clock went back: hold time at the start of the stored window
      i, e, P, C, h = i + d, 0, sp, sc, true
    end
  end
  return i, e, P, C, h
end
-- window i's counts: one small integer while they fit, else
-- "i:prev:curr"; dead before window i+2, where mod-4 aliasing could
-- misread them
local function sw_put(K, P, C, i, e, off, W)
  local v = s(i) .. ':' .. s(P) .. ':' .. s(C)
  if P < SW and C < SW then v = s((P * SW + C) * 4 + i % 4) end
  redis.call('SET', K, v, 'PX', s(2 * W - e + off))
end
local function rlaas_sliding(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local i, e, P, C = sw_get(K, W)
  -- P's weight, rounded up: ceil(P * (W - e) / W)
  local q, x = muldiv(P, W - e, W)
  local wp = q + (x > 0 and 1 or 0)
  local ok = wp + C + need <= L
  local off = i * W + e - now
  if charges(ok, commit, cost, m) then
    C = C + cost
    sw_put(K, P, C, i, e, off, W)
  end
  local rem = math.max(0, L - wp - C)
  local retry = 0
  if rem < need then
    local d
    local R = L - C - need
    if R >= 0 and P > R then
      -- later in this window: P * (W - e1) <= R * W
      local e1 = math.max(e + 1, W - muldiv(R, W, P))
      if e1 < W then d = e1 - e end
    end
    if not d then
      -- next window, where C is the previous count
      local e2 = 0
      if C > L - need then e2 = W - muldiv(L - need, W, C) end
      if e2 < W then d = W - e + e2 else d = 2 * W - e end
    end
    retry = d + off
  end
  local reset = off
  if C > 0 then reset = reset + 2 * W - e elseif P > 0 then reset = reset + W - e end
  return {ok and 1 or 0, rem, reset, retry}
end
-- a credit: n units back to the window of at, then (at in now's window)
-- to the previous one; both back to 0 is no key
local function rlaas_sliding_credit(K, L, W, n, m, at)
  local i, e, P, C, h = sw_get(K, W)
  local j, g, x = math.floor(at / W), 0, 0
  if h then j = i end
  if j == i then x = math.min(n, C); C, g = C - x, x end
  if j == i or j == i - 1 then x = math.min(n - g, P); P, g = P - x, g + x end
  if g == 0 then return 0 end
  if P == 0 and C == 0 then redis.call('DEL', K) else sw_put(K, P, C, i, e, i * W + e - now, W) end
  return g
end
