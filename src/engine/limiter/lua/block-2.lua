--[[
  After a 429: blocks the store until Retry-After plus jitter, keeping the later of two blocks.
  The refused request's slot stays in the ledger (the safe side), but the server did not count
  it: it leaves `answered`, so OBSERVE does not read later answers as if the server had it.

  Input:
    KEYS[1] lag           hash (includes/lag.lua): `blocked`, until when the store is blocked
                          (ms); `until`, the hash's expiry as last set; `answeredUntil`
    KEYS[2] answered      grant times of answered slots
    ARGV[1] retryAfterMs
    ARGV[2] jitterMs      at most this much is added at random
    ARGV[3] slot          the refused request's slot, or ''

  Output:
    {the block's end (ms), now (ms)}
]]
-- KEYS
local lagKey = KEYS[1]
local answeredKey = KEYS[2]
-- ARGV
local retryAfterMs = tonumber(ARGV[1])
local jitterMs = tonumber(ARGV[2])
local refusedSlot = ARGV[3]

--- @include "now"

-- (The set may be emptied: its expiry is no longer known.)
if refusedSlot ~= '' and redis.call('ZREM', answeredKey, refusedSlot) == 1 then
  redis.call('HDEL', lagKey, 'answeredUntil')
end
local untilMs = now + retryAfterMs + math.random(0, jitterMs)
local kept = redis.call('HMGET', lagKey, 'blocked', 'until')
local current = tonumber(kept[1] or '0')
if current > untilMs then return {current, now} end
-- The hash outlives the block (a long Retry-After can outlast its usual twenty windows).
local keep = untilMs + 1000
if not kept[2] or tonumber(kept[2]) < keep then
  redis.call('HSET', lagKey, 'blocked', untilMs, 'until', keep)
  redis.call('PEXPIRE', lagKey, keep - now)
else
  redis.call('HSET', lagKey, 'blocked', untilMs)
end
return {untilMs, now}
