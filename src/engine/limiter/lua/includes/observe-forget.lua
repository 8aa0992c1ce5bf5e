--[[
  OBSERVE, the server as the authority (a fragment: it runs inline, with the script's locals).
  When the server counts fewer than we do, the other client cannot have more in its window than
  it counted less ours it surely had (those whose answers came back before the answered one
  left, and that one). Learned requests beyond that are forgotten, newest first: our own
  requests a burst reordered on the way, learned as that client's on the safe side, would
  otherwise hold slots for a whole window. Returns 0 when nothing is missing.
]]
if missing <= 0 then
  markSeen()
  dropDoubt()
  -- The server is the authority when it counts fewer than we do: the other client cannot have
  -- more requests in its window than it counted less ours it surely had, those whose answers
  -- came back before the answered one left (and it). Learned requests beyond that (our own,
  -- reordered on the way and learned as the other client's, or that client slowing down) are
  -- forgotten, newest first, instead of holding slots for a whole window.
  -- (Not from a server at its limit: its count may be past it, and `remaining` stops at 0.)
  if others > 0 and left and serverRemaining > 0 then
    local leftMs = math.floor(tonumber(left) / 1000)
    local surely = 1
    for _, key in ipairs({slotsKey, liveKey}) do
      local slots = redis.call('ZRANGEBYSCORE', key, '(' .. (now - window), leftMs - margin)
      for _, member in ipairs(slots) do
        local granted = redis.call('ZSCORE', answeredKey, member)
        if granted and tonumber(granted) > now - window then surely = surely + 1 end
      end
    end
    local excess = others - math.max(limit - serverRemaining - surely, 0)
    if excess > 0 then redis.call('ZREMRANGEBYRANK', othersKey, -excess, -1) end
  end
  return 0
end
