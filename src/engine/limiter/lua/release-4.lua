--[[
  Gives back a slot whose request never left the process.

  Input:
    KEYS[1] slots
    KEYS[2] live
    KEYS[3] pending
    KEYS[4] sent
    ARGV[1] member

  Output:
    1 when the slot was held, else 0
]]
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
