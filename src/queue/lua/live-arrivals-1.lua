--[[
  Counts one more live arrival of a shop (see OrderQueues.countLive for what counts) and returns
  how many it had over the last window: a sliding-window counter, this window's count plus the
  previous window's weighted by the share of it the last window still covers. One string per
  shop, read once and written once with its expiry (GET, SET PX), O(1) whatever the burst.

  Input:
    KEYS[1] arrivals   the shop's counter: '<window index>:<its count>:<the previous count>'
    ARGV[1] windowMs   the provider's window
    ARGV[2] now        the caller's clock, epoch ms (the job's timestamp on the receiver's path)

  Output:
    the estimate, this arrival included (an integer, rounded up)
]]
local window = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local index = math.floor(now / window)
local b, c, previous = -1, 0, 0
local held = redis.call('GET', KEYS[1])
if held then
  local hb, hc, hp = string.match(held, '^(%d+):(%d+):(%d+)$')
  b, c, previous = tonumber(hb) or -1, tonumber(hc) or 0, tonumber(hp) or 0
end
if b ~= index then
  -- A new window: the one just ended becomes the previous one; an older one counts for nothing.
  if b == index - 1 then previous = c else previous = 0 end
  c = 0
end
c = c + 1
redis.call('SET', KEYS[1], string.format('%d:%d:%d', index, c, previous), 'PX', 2 * window)
local covered = 1 - (now - index * window) / window
return math.ceil(c + previous * covered)
