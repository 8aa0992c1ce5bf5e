--[[
  Our requests in flight (a fragment: it runs inline; needs `inflightKey`, `slotsKey`,
  `liveKey` and `first`, the ledger to look in first). One sorted set, `inflight`: each slot
  from its grant until its answer or failure settles it (or it is given back), scored by the
  moment its request left (Redis's clock, µs), the order the server counts them in. A slot whose
  request does not leave at its grant is scored `UNSENT` + its grant time (µs) until SENT
  rewrites it: above every moment of leaving, so it counts as in flight after any answer read
  meanwhile, and its grant time is still there. (Two sets before, `pending` by grant time and
  `sent` by the moment of leaving, held the same members: two writes and two expiries per grant,
  two reads and two removals per answer.)
  A marker member `~` (score 0) keeps the set from ever being emptied between requests, so its
  expiry, kept in `lag` (`inflightUntil`) as the ledgers' are, is set only where ACQUIRE renews
  it; every range read or trimmed starts above 0.
]]
local UNSENT = 4503599627370496
-- A score or bound in µs as Redis reads it (Lua's own tostring keeps 14 digits only).
local function usArg(x) return string.format('%.0f', x) end
