-- rlaas GCRA: STRING K (ends in :gcra) = theoretical arrival time (TAT), a
-- ms and a fraction of r ticks. One limit: an integer of ticks, r = L/g
-- (g = gcd(L, W)); a limit that varies per request: "l:ms:ticks", r = l.
-- Worked on as the debt D = (TAT - now) * l in parts of 1/W (water, as the
-- leaky bucket's, draining at l per ms): n whole + f
-- the debt: n + f as held now, (c, d) draining at l
local function gc_get(K, L, W)
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
  return n, f, c, d, l, v
end
-- ms until empty: q + x / l
local function gc_empty(c, d, W, l)
  local q, x = muldiv(c, W, l)
  x = x + d
  q, x = q + math.floor(x / l), x % l
  return q, x, q + (x > 0 and 1 or 0)
end
-- TAT = now + q ms + x / L
local function gc_put(K, q, x, reset, L, W, m)
  local g = gcd(L, W)
  local r, a, b, v = L / g, now + q
  if m % 2 == 1 then
    v = s(L) .. ':' .. s(a) .. ':' .. s(x)
  else
    b = math.ceil(x / g)
    if b >= r then a, b = a + 1, b - r end
    if a <= math.floor((2^53 - r) / r) then v = s(a * r + b) else v = s(a) .. ':' .. s(b) end
  end
  redis.call('SET', K, v, 'PX', s(math.max(1, reset)))
end
local function rlaas_gcra(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  local n, f, c, d, l = gc_get(K, L, W)
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
  local q, x, reset = gc_empty(c, d, W, l)
  if charge then gc_put(K, q, x, reset, L, W, m) end
  local retry = 0
  if u + need > L then
    -- until D <= (L - need) * W
    q, x = muldiv(c - L + need, W, l)
    retry = q + math.ceil((x + d) / l)
  end
  return {ok and 1 or 0, math.max(0, L - u), reset, retry}
end
-- a credit: n hits of debt off; none is no key
local function rlaas_gcra_credit(K, L, W, cost, m, at)
  local n, f, c, d, l, v = gc_get(K, L, W)
  if not v then return 0 end
  local g = math.min(cost, n + (f > 0 and 1 or 0))
  n = n - cost
  if n < 0 or (n == 0 and f == 0) then redis.call('DEL', K) return g end
  local q, x, reset = gc_empty(n, f, W, L)
  gc_put(K, q, x, reset, L, W, m)
  return g
end
