--[[
  ACQUIRE, pacing (a fragment: it runs inline, with the script's locals).
  With `pace`, bulk work's slots are spread evenly over the window, one per
  `window / (bulk ceiling - other clients' requests)` on average (the most it can use in a
  window), a generic cell rate algorithm allowing two intervals of burst. A slot pattern repeats
  itself a window later (a slot is taken again when it frees), so bursts and silences would
  otherwise last: other clients' requests are learned in clumps (all those made since our last
  answer, at once) and leave the ledger in clumps, bulk work taking every freed slot at once
  copies the clump into the next window, and a window filled faster than its length leaves a
  silence at its end in which nothing is learned and live orders find the window full. Paced,
  our requests spread evenly, we hear from the server every slot or so, and bulk work still
  gets its whole share.

  Sets: `pacedUntil` (no grant before it), `nextAt` (the grant's theoretical time), `interval`.
]]
-- Pacing as GCRA: `paced` holds the theoretical time of the next bulk grant; a grant may come
-- up to two intervals early (so a late caller catches up), and moves it one interval on.
local pacedUntil = 0
local nextAt = now
local interval = window / math.max(1, bulkCap - othersUsed)
if not live and pace then
  nextAt = math.max(tonumber(redis.call('GET', pacedKey) or '0'), now)
  pacedUntil = math.ceil(nextAt - 2 * interval)
end
