--[[
  Read-only (for `connector status`): counts what is live without removing anything.

  Input:
    KEYS[1] slots
    KEYS[2] lag          hash (includes/lag.lua): `blocked`, until when a 429 blocks the store
    KEYS[3] liveWaiters
    KEYS[4] bulkWaiters
    KEYS[5] live
    KEYS[6] others
    ARGV[1] windowMs
    ARGV[2] marginMs

  Output:
    {used, blockedUntil, oldest (-1 when none), liveWaiters, bulkWaiters, now}
]]
-- KEYS
local slotsKey = KEYS[1]
local lagKey = KEYS[2]
local liveWaitersKey = KEYS[3]
local bulkWaitersKey = KEYS[4]
local liveKey = KEYS[5]
local othersKey = KEYS[6]
-- ARGV
local windowMs = tonumber(ARGV[1])
local margin = tonumber(ARGV[2])

--- @include "now"

local floor = '(' .. (now - windowMs - margin)
local used = 0
local oldest = -1
for _, key in ipairs({slotsKey, liveKey, othersKey}) do
  used = used + redis.call('ZCOUNT', key, floor, '+inf')
  local first = redis.call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] and (oldest < 0 or tonumber(first[2]) < oldest) then oldest = tonumber(first[2]) end
end
local blocked = tonumber(redis.call('HGET', lagKey, 'blocked') or '0')
local live = redis.call('ZCOUNT', liveWaitersKey, floor, '+inf')
local bulk = redis.call('ZCOUNT', bulkWaitersKey, floor, '+inf')
return {used, blocked, oldest, live, bulk, now}
