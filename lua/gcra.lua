-- rlaas GCRA: STRING K (ends in :gcra) = theoretical arrival time (TAT), a
-- ms and a fraction of r ticks. One limit: an integer of ticks, r = L/g
-- (g = gcd(L, W)); a limit that varies per request: "l:ms:ticks", r = l.
-- Worked on as the debt D = (TAT - now) * l in parts of 1/W (water, as the
-- leaky bucket's, draining at l per ms): n whole + f
local function rlaas_gcra(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local g = gcd(L, W)
  local r = L / g
  local v = redis.call('GET', K)
  local a, b, l
  if v then
    local x, y, z = string.match(v, '^(%d+):(%d+):?(%d*)$')
    if z and z ~= '' then
      l = int(x, 1, 1e9)
      if l then a, b = tonumber(y), math.min(tonumber(z), l - 1) end
    elseif x then
      a, b = tonumber(x), math.min(tonumber(y), r - 1) * g
    else
      x = tonumber(v)
      if x and x % 1 == 0 then b = x % r; a, b = (x - b) / r, b * g end
    end
  end
  l = l or L
  -- past TAT: full bucket. A TAT is written at most W ahead, so its
  -- stamp is TAT - W at the earliest: the clock rule on that (a TAT
  -- misread under another tick size lies far ahead too: fresh)
  local n, f = 0, 0
  if a and b and a >= now and clock(a - W, W) then
    n, f = muldiv(a - now, l, W)
    f = f + b
    n, f = n + math.floor(f / W), f % W
  end
  -- as it drains on (c, d), and as the bucket at hand holds it: a debt
  -- beyond the old bucket (the clock went back) is kept
  local c, d = n, f
  if n >= l then
    if L < l then n = n - l + L end
  elseif n >= L then
    n, f = L, 0
  end
  local u = n + (f > 0 and 1 or 0)
  local ok = u + need <= L
  local charge = charges(ok, commit, cost, m)
  if charge then
    n = n + cost
    -- forced: a full bucket stays full
    if n > L or (n == L and f > 0) then n, f = L, 0 end
    u = n + (f > 0 and 1 or 0)
    c, d, l = n, f, L
  end
  -- until empty: ceil(D / l) ms
  local q, x = muldiv(c, W, l)
  x = x + d
  q, x = q + math.floor(x / l), x % l
  local reset = q + (x > 0 and 1 or 0)
  if charge then
    -- the TAT: now + D / L = now + q ms + x ticks of 1/L ms
    a = now + q
    if m % 2 == 1 then
      v = s(L) .. ':' .. s(a) .. ':' .. s(x)
    else
      b = math.ceil(x / g)
      if b >= r then a, b = a + 1, b - r end
      if a <= math.floor((2^53 - r) / r) then v = s(a * r + b) else v = s(a) .. ':' .. s(b) end
    end
    redis.call('SET', K, v, 'PX', s(math.max(1, reset)))
  end
  local retry = 0
  if u + need > L then
    -- until D <= (L - need) * W
    q, x = muldiv(c - L + need, W, l)
    retry = q + math.ceil((x + d) / l)
  end
  return {ok and 1 or 0, math.max(0, L - u), reset, retry}
end
