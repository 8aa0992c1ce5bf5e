--[[
  Adds a delivery's dedupe mark to its order's snapshot hash (field m, see snapshot-write.lua),
  for a caller that marks a delivery once its job is queued (the Redis Cluster's separate
  calls). Only into a hash a write of this receiver has stamped (field x): a hash that is gone
  is not made again without an expiry; the mark is then not kept, and a redelivery is processed
  again, which is harmless.

  Input:
    KEYS[1] snapshot   the order's hash
    ARGV[1] mark       the delivery's mark id
    ARGV[2] markTtl    how long the mark is kept, seconds
    ARGV[3] now        the caller's clock (epoch ms)

  Output:
    1 marked, 0 no snapshot to mark
]]
--- @include "marks"
local held = redis.call('HMGET', KEYS[1], 'm', 'x')
if not held[2] then return 0 end
local nowSec = math.floor(tonumber(ARGV[3]) / 1000)
local marks = liveMarks(held[1], nowSec, ARGV[1])
redis.call('HSET', KEYS[1], 'm', withMark(marks, ARGV[1], nowSec, ARGV[2]))
return 1
