--[[
  After a 429: blocks the store until Retry-After plus jitter, keeping the later of two blocks.

  Input:
    KEYS[1] blocked       until when the store is blocked (ms)
    ARGV[1] retryAfterMs
    ARGV[2] jitterMs      at most this much is added at random

  Output:
    the block's end (ms)
]]
--- @include "now"

local untilMs = now + tonumber(ARGV[1]) + math.random(0, tonumber(ARGV[2]))
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current > untilMs then return current end
redis.call("SET", KEYS[1], untilMs, "PX", untilMs - now + 1000)
return untilMs
