-- rlaas leaky bucket: HASH K (ends in :lb) {level, ts[, l]}
-- level n hits + f parts of 1/W of water, draining at r parts per ms: the
-- limit it was last charged under; a hit fits iff the water then stays
-- within the limit at hand
-- drained for dt ms at r (0: held)
local function lb_drain(n, f, dt, r, W)
  if dt >= W then return 0, 0 end
  local dq, dx = muldiv(dt, r, W)
  n, f = n - dq, f - dx
  if f < 0 then n, f = n - 1, f + W end
  if n < 0 then n, f = 0, 0 end
  return n, f
end
local function rlaas_leaky(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  -- missing key: empty
  local n, f, ts, dt, r, l = bucket_get(K, 'level', L, W)
  if not n then n, f, ts, dt, r = 0, 0, now, 0, L end
  -- never more water than the bucket held
  if n >= r then n, f = r, 0 end
  n, f = lb_drain(n, f, dt, r, W)
  -- the water as it drains on (a, b), and as the bucket at hand holds it
  local a, b = n, f
  if n >= L then n, f = L, 0 end
  -- a hit of need units fits iff level + need * W <= L * W
  local u = n + (f > 0 and 1 or 0)
  local ok = u + need <= L
  local charge = charges(ok, commit, cost, m)
  if charge then
    n = n + cost
    -- forced: a full bucket stays full
    if n > L or (n == L and f > 0) then n, f = L, 0 end
    u = n + (f > 0 and 1 or 0)
    a, b, r = n, f, L
  end
  local off = ts - now
  -- until empty: ceil((a * W + b) / r)
  local q, x = muldiv(a, W, r)
  local reset = off + q + math.ceil((x + b) / r)
  if charge then
    bucket_put(K, 'level', n, f, ts, L, W, m, l, reset)
  end
  local retry = 0
  if u + need > L then
    -- until the water is down to (L - need) * W
    q, x = muldiv(a - L + need, W, r)
    retry = off + q + math.ceil((x + b) / r)
  end
  return {ok and 1 or 0, math.max(0, L - u), reset, retry}
end
-- a credit: n hits of water out; empty is no key
local function rlaas_leaky_credit(K, L, W, c, m, at)
  local n, f, ts, dt, r, l = bucket_get(K, 'level', L, W)
  if not n then return 0 end
  if n >= r then n, f = r, 0 end
  n, f = lb_drain(n, f, dt, r, W)
  if n >= L then n, f = L, 0 end
  local g = math.min(c, n + (f > 0 and 1 or 0))
  n = n - c
  if n < 0 or (n == 0 and f == 0) then redis.call('DEL', K) return g end
  local q, x = muldiv(n, W, L)
  bucket_put(K, 'level', n, f, ts, L, W, m, l, ts - now + q + math.ceil((x + f) / L))
  return g
end
