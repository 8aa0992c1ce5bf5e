--[[
  Counts one more live job queued for a shop and returns how many it queued over the last
  window: a sliding-window counter, this window's count plus the previous window's weighted by
  the share of it the last window still covers. One hash per shop, O(1) whatever the burst.

  Input:
    KEYS[1] arrivals   the shop's hash: b = index of the current window, c = its count,
                       p = the previous window's count
    ARGV[1] windowMs   the provider's window

  Output:
    the estimate, this job included (an integer, rounded up)
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local index = math.floor(now / window)
local held = redis.call('HMGET', KEYS[1], 'b', 'c')
local b, c = tonumber(held[1]), tonumber(held[2]) or 0
local previous = 0
if b == index then
  previous = tonumber(redis.call('HGET', KEYS[1], 'p')) or 0
elseif b == index - 1 then
  previous = c
  c = 0
else
  c = 0
end
c = c + 1
redis.call('HSET', KEYS[1], 'b', index, 'c', c, 'p', previous)
redis.call('PEXPIRE', KEYS[1], 2 * window)
local covered = 1 - (now - index * window) / window
return math.ceil(c + previous * covered)
