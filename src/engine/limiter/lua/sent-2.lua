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
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', us - window * 2000)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], us, ARGV[1])
redis.call('PEXPIRE', KEYS[2], window * 2)
return 1
