--[[
  ACQUIRE, block (a fragment: it runs inline, with the script's locals).
  While a 429 blocks the store (BLOCK), everyone is refused until the block ends. A waiter
  keeps its place in line through the block, and those due come back after it one slot
  interval apart, not all at its end. Returns the refusal while blocked.
]]
local blocked = tonumber(lagged[10] or '0')
if blocked > now then
  -- The line waits out a block in order: a waiter keeps its place, and those due come back
  -- one slot interval apart after it, not all at its end.
  local retry = blocked
  if promised then
    addWaiter(promisedIn, promised, waiter)
    -- (Those due ahead of it: the rest of the line keeps its moments.)
    local ahead = redis.call('ZCOUNT', promisedIn, now - window, '(' .. promised)
    retry = math.max(tonumber(promised), math.ceil(blocked + ahead * window / limit))
  elseif waiter ~= '' then
    retry = math.ceil(blocked + redis.call('ZCARD', liveWaitersKey) * window / limit)
  end
  return {0, retry, 'blocked', 0}
end
