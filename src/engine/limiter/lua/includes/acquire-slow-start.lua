--[[
  ACQUIRE, slow start (a fragment: it runs inline, with the script's locals).
  On a store no answer has told us about for a window, the first live request goes alone and
  the others wait for its answer (at most `probeMs`). Sets `probing` when this request is to be
  that first one (recorded in `probe` when it is granted); returns the refusal of the others.
]]
-- Slow start for live work: while no answer has told us the store's budget (another client
-- may be spending it), the first live request goes alone and the others wait for its answer,
-- up to `probeMs`: a blind burst into a shared budget meets 429s that stop the store. Once a
-- window: an answer without RateLimit headers teaches nothing, but ends the wait.
local probing = false
if live and probeMs > 0 and not seen then
  local probe = redis.call('HMGET', probeKey, 'at', 'slot')
  if not probe[1] then
    probing = true
  elseif now < tonumber(probe[1]) + probeMs and redis.call('ZSCORE', inflightKey, probe[2]) then
    local poll = math.max(1, math.min(math.ceil(window / limit), 50))
    local retry = math.min(now + poll, tonumber(probe[1]) + probeMs)
    -- In line already: if the answer is slow and the job leaves the process, it keeps its place.
    if waiter ~= '' then
      addWaiter(liveWaitersKey, promised or retry, waiter)
      local last = redis.call('ZRANGE', liveWaitersKey, -1, -1, 'WITHSCORES')
      redis.call('PEXPIRE', liveWaitersKey, math.ceil(math.max(tonumber(last[2]) - now, 0) + (window + margin) * 2))
    end
    return {0, retry, 'window', 0, 0}
  end
end
