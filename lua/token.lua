-- rlaas token bucket: HASH K (ends in :tb) {tokens, ts[, l]}
-- level n tokens + f parts of 1/W: it follows the limit at hand, refilled
-- at L parts per ms since the last charge, full (L tokens) after W ms
local function rlaas_token(K, L, W, cost, m, commit)
  local need = math.max(cost, 1)
  -- missing key: full
  local n, f, ts, dt, r, l = bucket_get(K, 'tokens', L, W)
  if not n then n, f, ts, dt = L, 0, now, 0 end
  -- held (clock went back): dt is 0, no refill, time stays at the stamp
  if dt >= W then
    n, f = L, 0
  else
    local dq, dx = muldiv(dt, L, W)
    n, f = n + dq, f + dx
    if f >= W then n, f = n + 1, f - W end
  end
  if n >= L then n, f = L, 0 end
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
