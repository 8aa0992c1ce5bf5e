--[[
  A writer that holds the entry's lock has written the entry: its row is written, and its mark
  of a write in flight taken off (the field goes once no write is in flight).

  Input:
    KEYS[1] index     entry id -> its row (category, a line break, reason)
    KEYS[2] writing   entry id -> how many writes of it began and did not finish
    ARGV[1] id        the entry's id
    ARGV[2] row       the entry's row, from the data just written

  Output:
    the writes of the entry still in flight (0 when the row can be trusted)
]]
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local left = redis.call('HINCRBY', KEYS[2], ARGV[1], -1)
if left <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 0
end
return left
