--[[
  Records that an order changed in a way its payload did not fully describe (orders/edited,
  refunds/create): the newest such moment is kept, and the job refetches the order. A hint is
  always "stored": it never holds a version a job could skip. With a second key, a dedupe mark
  already there answers 3 ("duplicate") and nothing is written.

  Input:
    KEYS[1] snapshot   the order's hash (h, lv …)
    KEYS[2] seen       optional: the event's dedupe mark
    ARGV[1] atMs       when the change happened, epoch ms
    ARGV[2] ttlMs      how long the snapshot is kept after this write
    ARGV[3] liveAt     when a live event touched it (ms), or ''

  Output:
    1 stored, 3 duplicate
]]
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return 3 end
local current = tonumber(redis.call('HGET', KEYS[1], 'h') or '-1')
local newer = tonumber(ARGV[1]) > current
if newer and ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'h', ARGV[1], 'lv', ARGV[3])
elseif newer then
  redis.call('HSET', KEYS[1], 'h', ARGV[1])
elseif ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'lv', ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
