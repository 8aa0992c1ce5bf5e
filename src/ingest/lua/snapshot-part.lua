--[[
  Stores one versioned part of an order's snapshot hash when it is strictly newer than the one
  kept: the whole order (fields o / ov) or a fulfillment from a fulfillments/* webhook
  (f:<id> / fv:<id>). One algorithm for both; the caller names the fields.

  With a second key (the receiver's call), the event's dedupe mark is checked first: a mark
  already there answers 3 ("duplicate") before anything is written, and an older delivery, which
  needs no job, is marked in the same call. A delivery that needs a job is marked by the
  receiver only after the job is queued: a mark written before a job that then failed would turn
  Shopify's retry into a "duplicate" and lose the event.

  Input:
    KEYS[1] snapshot   the order's hash (o, ov, f:<id>, fv:<id>, lv …)
    KEYS[2] seen       optional: the event's dedupe mark
    ARGV[1] field      where the part's JSON goes: 'o', or 'f:<id>'
    ARGV[2] vfield     where its version goes: 'ov', or 'fv:<id>'
    ARGV[3] json       the part (SourceOrder or SourceFulfillment JSON)
    ARGV[4] version    its updated_at, epoch ms
    ARGV[5] ttlMs      how long the snapshot is kept after this write
    ARGV[6] liveAt     when a live event touched it (ms), or ''
    ARGV[7] seenTtl    with KEYS[2]: how long the mark is kept, seconds

  Output:
    1 stored, 2 the same version was kept, 0 a newer one was kept, 3 duplicate
]]
local snapshot = KEYS[1]
local seen = KEYS[2]
local field = ARGV[1]
local vfield = ARGV[2]
local json = ARGV[3]
local version = ARGV[4]
local ttlMs = ARGV[5]
local liveAt = ARGV[6]
local seenTtl = ARGV[7]

if seen and redis.call('EXISTS', seen) == 1 then return 3 end
local current = tonumber(redis.call('HGET', snapshot, vfield) or '-1')
local incoming = tonumber(version)
local stored = 0
if incoming > current then
  if liveAt ~= '' then
    redis.call('HSET', snapshot, field, json, vfield, version, 'lv', liveAt)
  else
    redis.call('HSET', snapshot, field, json, vfield, version)
  end
  stored = 1
elseif incoming == current then
  stored = 2
end
if stored ~= 1 and liveAt ~= '' then redis.call('HSET', snapshot, 'lv', liveAt) end
redis.call('PEXPIRE', snapshot, ttlMs)
if seen and stored == 0 then redis.call('SET', seen, '1', 'EX', seenTtl) end
return stored
