--[[
  Stores a fulfillment (from a fulfillments/* webhook) in its order's snapshot hash when it is
  strictly newer than the one kept. The dedupe mark works as in snapshot-order.lua.

  Input:
    KEYS[1] snapshot   the order's hash (f:<id>, fv:<id>, lv …)
    KEYS[2] seen       optional: the event's dedupe mark
    ARGV[1] id         the fulfillment's id
    ARGV[2] json       the fulfillment (SourceFulfillment JSON)
    ARGV[3] version    its updated_at, epoch ms
    ARGV[4] ttlMs      how long the snapshot is kept after this write
    ARGV[5] liveAt     when a live event touched it (ms), or ''
    ARGV[6] seenTtl    with KEYS[2]: how long the mark is kept, seconds

  Output:
    1 stored, 2 the same version was kept, 0 a newer one was kept, 3 duplicate
]]
local seen = KEYS[2]
if seen and redis.call('EXISTS', seen) == 1 then return 3 end
local field = 'f:' .. ARGV[1]
local vfield = 'fv:' .. ARGV[1]
local current = tonumber(redis.call('HGET', KEYS[1], vfield) or '-1')
local incoming = tonumber(ARGV[3])
local stored = 0
if incoming > current then
  redis.call('HSET', KEYS[1], field, ARGV[2], vfield, ARGV[3])
  stored = 1
elseif incoming == current then
  stored = 2
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'lv', ARGV[5]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if seen and stored == 0 then redis.call('SET', seen, '1', 'EX', ARGV[6]) end
return stored
