-- rlaas token bucket: HASH K (ends in :tb) {tokens, ts[, l]}
-- level n tokens + f parts of 1/W: it follows the limit at hand, refilled
-- at L parts per ms since the last charge, full (L tokens) after W ms
-- refilled for dt ms (0: held), at most full
local function tb_fill(n, f, dt, L, W)
  if dt >= W then return L, 0 end
  local dq, dx = muldiv(dt, L, W)
  n, f = n + dq, f + dx
  if f >= W then n, f = n + 1, f - W end
  if n >= L then n, f = L, 0 end
  return n, f
end
local function rlaas_token(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  -- missing key: full
  local n, f, ts, dt, r, l = bucket_get(K, 'tokens', L, W)
  if not n then n, f, ts, dt = L, 0, now, 0 end
  n, f = tb_fill(n, f, dt, L, W)
  local ok = n >= need
  local off = ts - now
  -- until full: ceil(((L - n) * W - f) / L)
  local q, x = muldiv(L - n, W, L)
  local reset = off + q + math.ceil((x - f) / L)
  if charges(ok, commit, cost, m) then
    n = n - cost
    if n < 0 then n, f = 0, 0 end
    q, x = muldiv(L - n, W, L)
    reset = off + q + math.ceil((x - f) / L)
    -- under a larger limit it takes longer to fill, never over W
    bucket_put(K, 'tokens', n, f, ts, L, W, m, l, (m % 2 == 1 or l) and math.max(W, reset) or reset)
  end
  local retry = 0
  if n < need then
    q, x = muldiv(need - n, W, L)
    retry = off + q + math.ceil((x - f) / L)
  end
  return {ok and 1 or 0, n, reset, retry}
end
-- a credit: n tokens back; full is no key
local function rlaas_token_credit(K, L, W, c, m, at)
  local n, f, ts, dt, r, l = bucket_get(K, 'tokens', L, W)
  if not n then return 0 end
  n, f = tb_fill(n, f, dt, L, W)
  local g = math.min(c, L - n)
  if n + c >= L then redis.call('DEL', K) return g end
  n = n + c
  local q, x = muldiv(L - n, W, L)
  local reset = ts - now + q + math.ceil((x - f) / L)
  bucket_put(K, 'tokens', n, f, ts, L, W, m, l, (m % 2 == 1 or l) and math.max(W, reset) or reset)
  return g
end
