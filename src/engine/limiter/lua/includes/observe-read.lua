--[[
  OBSERVE, the other client's pace (a fragment: it runs inline, with the script's locals).
  An answer no request of ours could have overtaken (none left after it) reads exactly how many
  requests the other client has in the window: kept in `lag` (`others`, `othersAt`) for
  ACQUIRE, which plans a flood's line with it and keeps counting it while no answer comes.
]]
-- The answered request the only one of ours in flight (none left before it and is still
-- unanswered, none left after it): the answer tells exactly how many requests the other client
-- had in the window (what it spends per window), without the requests of ours that a burst
-- reorders on the way and `others` counts on the safe side. ACQUIRE plans a flood's line with
-- it and counts it while no answer comes. (One of ours that left before it but arrived after
-- it would make the count too low by one: in a clump of a dozen in flight, it read 11 for 20,
-- and the window went over.)
-- (Nothing to keep while no other client is seen at all: the common case costs no write. The
-- hash's expiry is `flushLag`'s, see lag.lua.)
local read = math.max(limit - serverRemaining - ours, 0)
if answered and left and after == 0 and (read > 0 or others > 0) and countBefore() == 0 then
  -- Up at once, down by one a tenth of a window at most: our requests near the window's edge
  -- are counted by their settled moment (a little after they arrived), so a clump of them there
  -- reads the other client a few requests short (16 for 20), and a count too low puts the window
  -- over. A client that really slows down is followed within a window or two.
  local last = tonumber(lagState.others or '')
  if last and lagState.othersAt and now - tonumber(lagState.othersAt) < 2 * window and read < last then
    if now - tonumber(lagState.othersDown or '0') >= window / 10 then
      read = last - 1
      setLag('othersDown', now)
    else
      read = last
    end
  end
  setLag('others', read)
  setLag('othersAt', now)
end
