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
local held = redis.call('HMGET', KEYS[1], 'b', 'c', 'p')
local c, previous = tonumber(held[2]) or 0, tonumber(held[3]) or 0
local b = tonumber(held[1])
if b ~= index then
  -- A new window: the one just ended becomes the previous one; an older one counts for nothing.
  if b == index - 1 then previous = c else previous = 0 end
  c = 0
end
c = c + 1
redis.call('HSET', KEYS[1], 'b', index, 'c', c, 'p', previous)
redis.call('PEXPIRE', KEYS[1], 2 * window)
local covered = 1 - (now - index * window) / window
return math.ceil(c + previous * covered)
