--[[
  Read-only (for `connector status`): counts what is live without removing anything.

  Input:
    KEYS[1] slots
    KEYS[2] blocked
    KEYS[3] liveWaiters
    KEYS[4] bulkWaiters
    KEYS[5] live
    KEYS[6] others
    ARGV[1] windowMs
    ARGV[2] marginMs

  Output:
    {used, blockedUntil, oldest (-1 when none), liveWaiters, bulkWaiters, now}
]]
--- @include "now"

local floor = '(' .. (now - tonumber(ARGV[1]) - tonumber(ARGV[2]))
local used = 0
local oldest = -1
for _, key in ipairs({KEYS[1], KEYS[5], KEYS[6]}) do
  used = used + redis.call('ZCOUNT', key, floor, '+inf')
  local first = redis.call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] and (oldest < 0 or tonumber(first[2]) < oldest) then oldest = tonumber(first[2]) end
end
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
local live = redis.call('ZCOUNT', KEYS[3], floor, '+inf')
local bulk = redis.call('ZCOUNT', KEYS[4], floor, '+inf')
return {used, blocked, oldest, live, bulk, now}
