--[[
  Gives back a slot whose request never left the process.

  Input:
    KEYS[1] slots
    KEYS[2] live
    KEYS[3] inflight
    ARGV[1] member

  Output:
    1 when the slot was held, else 0
]]
-- KEYS
local slotsKey = KEYS[1]
local liveKey = KEYS[2]
local inflightKey = KEYS[3]
-- ARGV
local member = ARGV[1]

redis.call('ZREM', inflightKey, member)
return redis.call('ZREM', slotsKey, member) + redis.call('ZREM', liveKey, member)
