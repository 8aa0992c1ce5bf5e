--[[
  After a 429: blocks the store until Retry-After plus jitter, keeping the later of two blocks.
  The refused request's slot stays in the ledger (the safe side), but the server did not count
  it: it leaves `answered`, so OBSERVE does not read later answers as if the server had it.

  Input:
    KEYS[1] blocked       until when the store is blocked (ms)
    KEYS[2] answered      grant times of answered slots
    ARGV[1] retryAfterMs
    ARGV[2] jitterMs      at most this much is added at random
    ARGV[3] slot          the refused request's slot, or ''

  Output:
    the block's end (ms)
]]
--- @include "now"

if ARGV[3] ~= '' then redis.call('ZREM', KEYS[2], ARGV[3]) end
local untilMs = now + tonumber(ARGV[1]) + math.random(0, tonumber(ARGV[2]))
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current > untilMs then return current end
redis.call("SET", KEYS[1], untilMs, "PX", untilMs - now + 1000)
return untilMs
