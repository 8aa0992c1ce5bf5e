--[[
  ACQUIRE, spread (a fragment: it runs inline, with the script's locals).
  A flood while another client spends: the line is spread over the window (one promise per
  slot interval of our share) instead of each waiter being promised the moment a slot frees.

  Sets: `spread` (ms between promises, 0 when not spread), `share` (the slots per life the
  line drains); for live work in a spread line, `nextAt` and `pacedUntil` too (one grant per
  interval), and `lag.lead`.
]]
-- SPREAD. A flood while another client spends: the line is spread over the window, one
-- promise per slot interval of our share, instead of each waiter promised the moment a slot
-- frees. Slots taken together free together: the line would go out in a clump at each
-- window's start and fall silent for the rest of it, and that client's requests made in the
-- silence would be learned all at once at the next clump, as it goes out (429s). Spread, we
-- hear from the server every slot or so. Spreading a clump costs its slots part of a window
-- once; the line then keeps the pattern. Only the few jobs due at a time wait in the process,
-- so they are handed back a whole queue delay early, and an interval more.
local spread = 0
local share = liveCap - othersUsed
if live and headroom > 0 and (liveWaiting > 0 or promised ~= nil) then
  -- Planned for the whole line at once, so with what holds while it drains, not with this
  -- moment's: the other client's requests per window as the last unambiguous answer read them
  -- (`others` also holds, on the safe side, requests of ours a burst reordered) and one request
  -- of that client on its way (see above).
  local planned = read or othersUsed
  share = math.max(1, limit - planned - 1)
  lag.lead = math.min(lag.grant + window / share, window / 10, 500)
  -- The line drains `share` slots per slot life. Not per queue delay as well: every waiter of a
  -- continuous line comes back about as late, and takes a slot that freed as late, so that
  -- delay shifts the line without slowing it. Nor per the time slots settle late: the line is
  -- planned while the burst is being read, when answers are read late (13 ms a slot at a 2 s
  -- window, against under 1 ms once the line runs), and a line planned that slow stays that
  -- slow, 0.5 % of the budget. A waiter whose slot has not freed yet at its moment is told the
  -- next one to free and keeps its place.
  spread = life / share
  -- Paced as well, one grant per interval: waiters all due at once (those held back for the
  -- slow start's first answer) would otherwise go out in a clump, and a clump frees its slots
  -- together a window later, faster than the spread line takes them again; the window runs
  -- short of our share from then on. Waiters the line told their moments may be up to four
  -- intervals late and catch up.
  local liveAt = tonumber(lagged[5] or '0')
  if live then
    nextAt = math.max(liveAt, now)
    local slack = 0
    if told then slack = 4 end
    pacedUntil = math.ceil(liveAt - slack * spread)
  end
end
