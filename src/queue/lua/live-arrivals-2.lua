--[[
  Counts one more live arrival of a shop (see OrderQueues.countLive for what counts) and returns
  how many it had over the last window: a sliding-window counter, this window's count plus the
  previous window's weighted by the share of it the last window still covers.

  One counter per shop and window, holding previous * 2^26 + count: an arrival is one INCR that
  answers both. Only a window's first arrival reads the previous window's counter, once, and
  sets the new one's expiry (two windows: through the next, where it is the previous one).

  Input:
    KEYS[1] current    the shop's counter of the window `now` falls in
    KEYS[2] previous   the shop's counter of the window before
    ARGV[1] windowMs   the provider's window
    ARGV[2] now        the caller's clock, epoch ms (the job's timestamp on the receiver's path)

  Output:
    the estimate, this arrival included (an integer, rounded up)
]]
local SPLIT = 67108864 -- 2^26 arrivals per window and shop, far above any store's budget
local window = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local held = redis.call('INCR', KEYS[1])
if held == 1 then
  local before = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  held = (before % SPLIT) * SPLIT + 1
  redis.call('SET', KEYS[1], string.format('%.0f', held), 'PX', 2 * window)
end
local count = held % SPLIT
local previous = math.floor(held / SPLIT)
local covered = 1 - (now % window) / window
return math.ceil(count + previous * covered)
