--[[
  ACQUIRE, headroom and caps (a fragment: it runs inline, with the script's locals).
  The rule (ADR 0001): bulk work and other clients' requests together stay below
  `limit - headroom - reserve`, and bulk work takes a slot only while the whole window is below
  `limit - headroom`; live work takes any slot up to the limit. The reserve is counted against
  everything but live work, so live orders add to a saturated window instead of replacing bulk
  slots, and a live order finds a slot at once unless live work alone exceeds its reserve and
  the headroom. The headroom is kept only while another client is spending the store's budget:
  its requests since our last answer are unseen. Every cap is also lowered by the other
  client's requests expected since that answer (its count in the last window, pro rata), so a
  stalled process does not spend what the other client has meanwhile used.

  Sets: `headroom`, `expected` (the other client's requests expected since the last answer),
  `liveCap`, `cap`, `bulkCap`, `nonLive`.
]]
local headroom = 0
local unseen = 0
local expected = 0
if othersUsed > 0 then
  local since = math.min(math.max(now - (seen or 0), 0), window)
  expected = othersUsed * since / window
  unseen = math.floor(expected)
  headroom = sharedHeadroom
end
-- A burst of live work counts the other client's request expected since the last answer from
-- half a request on (a burst that fills the window at once would meet it otherwise).
local liveCap = math.max(1, limit - math.floor(expected + 0.5))
-- Live work may use the headroom in a short burst, and in a flood (live jobs waiting) all but
-- the other client's request that is probably on its way (rounding up what it is expected to
-- have sent since). No slot of the headroom is kept for requests of that client not learned
-- yet: the flood's line is spread (see SPREAD) and an answer comes every slot or so, so none
-- is unseen for longer than a slot. Each slot kept cost one of our 80 a window with it at 20 %,
-- and a burst of 5,000 two windows.
if headroom > 0 and liveCount > 0 then
  liveCap = math.max(1, limit - math.ceil(expected))
end
local cap = math.max(1, limit - unseen - headroom)
local bulkCap = math.max(1, cap - reserve)
local nonLive = bulkUsed + othersUsed
