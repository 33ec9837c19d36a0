package RLaaS::Seeds;
# The seeds' own sliding-window script (seeds 000/003, "The full
# slidingWindow.lua script executed atomically in Redis"), copied as
# written: a service built from the seeds runs it on
# rlaas:rate_limit:<userId> with its own clock in ARGV[1] (ms), the window
# in seconds and the limit. The module's sliding log shares such a key with
# it (t/lua/11-sliding_log.t, t/lua/30-model.t, t/seeds.t).
use strict;
use warnings;
use Exporter 'import';

our @EXPORT_OK = qw(SEEDS_SLIDING_WINDOW);

use constant SEEDS_SLIDING_WINDOW => <<'LUA';
local key   = KEYS[1]                          -- e.g. rlaas:rate_limit:alice
local now   = tonumber(ARGV[1])                -- current time in milliseconds
local window = tonumber(ARGV[2]) * 1000        -- windowSize converted to ms
local limit = tonumber(ARGV[3])                -- max requests allowed

-- Step 1: Remove entries that have fallen outside the rolling window
redis.call("ZREMRANGEBYSCORE", key, 0, now - window)

-- Step 2: Count entries still inside the window
local count = redis.call("ZCARD", key)

if count < limit then
    -- Step 3a: Under limit — add this request and extend TTL
    local member = tostring(now) .. "-" .. math.random()
    redis.call("ZADD", key, now, member)
    redis.call("PEXPIRE", key, window * 2)
    return {1, count, window/1000}             -- allowed; ttl = windowSize in seconds
else
    -- Step 3b: At or over limit — extend TTL and deny
    redis.call("PEXPIRE", key, window * 2)
    return {0, count, window/1000}             -- denied; ttl = windowSize in seconds
end
LUA

1;
