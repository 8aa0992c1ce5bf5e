--[[
  Stores an order in its snapshot hash when it is strictly newer than the one kept.

  With a second key (the receiver's call), the event's dedupe mark is checked first: a mark
  already there answers 3 ("duplicate") before anything is written, and an older delivery, which
  needs no job, is marked in the same call. A delivery that needs a job is marked by the
  receiver only after the job is queued: a mark written before a job that then failed would turn
  Shopify's retry into a "duplicate" and lose the event.

  Input:
    KEYS[1] snapshot   the order's hash (o, ov, lv …)
    KEYS[2] seen       optional: the event's dedupe mark
    ARGV[1] json       the order (SourceOrder JSON)
    ARGV[2] version    its updated_at, epoch ms
    ARGV[3] ttlMs      how long the snapshot is kept after this write
    ARGV[4] liveAt     when a live event touched it (ms), or ''
    ARGV[5] seenTtl    with KEYS[2]: how long the mark is kept, seconds

  Output:
    1 stored, 2 the same version was kept, 0 a newer one was kept, 3 duplicate
]]
local seen = KEYS[2]
if seen and redis.call('EXISTS', seen) == 1 then return 3 end
local current = tonumber(redis.call('HGET', KEYS[1], 'ov') or '-1')
local incoming = tonumber(ARGV[2])
local stored = 0
if incoming > current then
  redis.call('HSET', KEYS[1], 'o', ARGV[1], 'ov', ARGV[2])
  stored = 1
elseif incoming == current then
  stored = 2
end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'lv', ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if seen and stored == 0 then redis.call('SET', seen, '1', 'EX', ARGV[5]) end
return stored
