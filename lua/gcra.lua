-- rlaas GCRA: STRING K (ends in :gcra) = theoretical arrival time (TAT)
-- ticks: r per ms; emission interval T = c ticks; tolerance (L-1)*c
-- times are (ms, ticks) pairs with 0 <= ticks < r
local g = gcd(L, W)
local c, r = W / g, L / g
local Ta, Tb = math.floor(c / r), c % r
local ua, ub = muldiv(L - 1, c, r)
local a, b = now, 0
local v = redis.call('GET', K)
if v then
  local x, y = string.match(v, '^(%d+):(%d+)$')
  if x then
    x, y = tonumber(x), math.min(tonumber(y), r - 1)
  else
    x = tonumber(v)
    if x and x % 1 == 0 then y = x % r; x = (x - y) / r else x = nil end
  end
  -- past TAT: full bucket. A TAT is written at most W ahead, so its
  -- stamp is TAT - W at the earliest: the clock rule on that (a TAT
  -- misread under another tick size lies far ahead too: fresh)
  if x and x >= now and clock(x - W) then a, b = x, y end
end
-- allowed iff TAT - now <= tolerance
local ok = a - now < ua or (a - now == ua and b <= ub)
if ok then
  a, b = a + Ta, b + Tb
  if b >= r then a, b = a + 1, b - r end
end
local da = a - now
-- remaining = L - ceil((TAT - now) / T)
local rem = 0
if da <= W then
  local q, x = muldiv(da, r, c)
  rem = math.max(0, L - q - math.ceil((x + b) / c))
end
local reset = da + (b > 0 and 1 or 0)
local retry = 0
if rem == 0 then retry = da - ua + (b > ub and 1 or 0) end
if a <= math.floor((2^53 - r) / r) then v = s(a * r + b) else v = s(a) .. ':' .. s(b) end
redis.call('SET', K, v, 'PX', s(math.max(1, reset)))
return {ok and 1 or 0, rem, reset, retry}
