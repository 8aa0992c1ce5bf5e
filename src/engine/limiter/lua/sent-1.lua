--[[
  The slot's request is leaving now: its score in `inflight` (includes/inflight.lua), its grant
  time until now, becomes the moment it left (Redis's clock, in microseconds), which is the
  order the server counts them in. Grant order is not: between its grant and its request a job
  writes its intent, and a busy process may send a request granted earlier after another
  process has sent one granted later. A slot no longer in flight (settled, given back) is not
  added again.

  Input:
    KEYS[1] inflight
    ARGV[1] member

  Output:
    the moment it left (µs) when the slot is in flight, else 0
]]
-- KEYS
local inflightKey = KEYS[1]
-- ARGV
local member = ARGV[1]

local t = redis.call('TIME')
local us = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
if redis.call('ZADD', inflightKey, 'XX', 'CH', us, member) == 0 then return 0 end
return us
