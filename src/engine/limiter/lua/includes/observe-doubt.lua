--[[
  OBSERVE, doubt (a fragment: it runs inline, with the script's locals).
  Requests may still arrive in another order than they were marked as leaving: a process whose
  event loop is busy marks a request and sends it tens of milliseconds later. A shortfall no
  larger than our requests that left after the answered one and are still in flight may be
  that, so it is held (`doubt`) and learned only when the answer to a request that left after
  it was held shows it again; a larger one is learned at once. One phantom request costs a
  slot for a whole window; waiting for a later answer to learn a real one costs what the
  headroom covers. Once another client is known to be spending in the window, a shortfall is
  learned at once: it is most likely that client's next request. Until it is confirmed or
  learned, the answer does not count as seen (the requests ACQUIRE expects from that client
  since the last clear answer stay counted).

  Sets: `learned`, how many of the other client's requests to add.
]]
local sure = math.max(missing - after, 0)
local doubt = missing - sure
local learned = sure
local heldBack = false
if others > 0 then
  -- Another client has been spending in this window: a shortfall is most likely its next
  -- request, and learning it late risks a 429 that stops the store for a whole Retry-After.
  -- (If it was ours after all, a later answer shows the surplus and it is forgotten.)
  learned = missing
  dropDoubt()
elseif doubt > 0 then
  -- Confirmed only by an answer to a request that left after the doubt was recorded: every
  -- request that could have overtaken the doubted one had left by then, and counts as ours.
  -- (Held for a window: `doubtUntil`.)
  local held = lagState.doubtCount and lagState.doubtUntil and now < tonumber(lagState.doubtUntil)
  if held and left and tonumber(left) > tonumber(lagState.doubtAt) then
    learned = learned + math.min(doubt, tonumber(lagState.doubtCount))
    dropDoubt()
  else
    heldBack = true
    if not held then
      local t = redis.call('TIME')
      setLag('doubtCount', doubt)
      setLag('doubtAt', tonumber(t[1]) * 1000000 + tonumber(t[2]))
      setLag('doubtUntil', now + window)
    end
  end
else
  dropDoubt()
end
-- A shortfall held back may be the other client's request: the answer does not count as seen
-- (the requests expected from that client since the last clear answer stay counted).
if not heldBack or seenBefore == 0 then markSeen(learned > 0) end
