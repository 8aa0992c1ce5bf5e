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
local MAX_MARKS = 100
local held = redis.call('HMGET', KEYS[1], 'm', 'x')
if not held[2] then return 0 end
local nowSec = math.floor(tonumber(ARGV[3]) / 1000)
local marks = {}
for id, expires in string.gmatch(held[1] or '', '(%x+):(%d+);') do
  if tonumber(expires) > nowSec and id ~= ARGV[1] then marks[#marks + 1] = id .. ':' .. expires .. ';' end
end
local first = math.max(1, #marks - MAX_MARKS + 2)
redis.call('HSET', KEYS[1], 'm', table.concat(marks, '', first) .. ARGV[1] .. ':' ..
  string.format('%.0f', nowSec + tonumber(ARGV[2])) .. ';')
return 1
