--[[
  The slot's request is leaving now: `sent` orders
  the pending requests by the moment they left (Redis's clock, in microseconds), which is the
  order the server counts them in. Grant order is not: between its grant and its request a job
  writes its intent, and a busy process may send a request granted earlier after another
  process has sent one granted later.

  Input:
    KEYS[1] pending
    KEYS[2] sent
    ARGV[1] member
    ARGV[2] windowMs

  Output:
    1 when the slot is pending, else 0
]]
-- KEYS
local pendingKey = KEYS[1]
local sentKey = KEYS[2]
-- ARGV
local member = ARGV[1]
local window = tonumber(ARGV[2])

local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- Entries leave when their slot is settled or released; what a lost process left behind is
-- trimmed now and then (OBSERVE counts only the last two windows of it).
if us % 8 == 0 then redis.call('ZREMRANGEBYSCORE', sentKey, '-inf', us - window * 2000) end
if not redis.call('ZSCORE', pendingKey, member) then return 0 end
redis.call('ZADD', sentKey, us, member)
redis.call('PEXPIRE', sentKey, window * 2)
return 1
