--[[
  When the job with `ahead` jobs in line before it can have a slot, with at most `cap` slots
  taken in the given ledgers at a time. The slots free oldest first (a ledger holding more than
  `cap`, when other clients spend, frees its surplus first); a free slot is taken at once. A
  position beyond one cap's worth wraps: a slot taken by a job ahead frees again one life
  later, so the line drains `cap` per life whatever the ledger holds now. (Wrapping over the
  slots the ledger holds instead would promise a lull's few slots for cycle after cycle,
  minutes away.)

  Each round also starts `lag.cycle` ms late: a slot is settled at its request's answer,
  later than its grant (`lag.settle` on average, counted up to a slot interval per round; see
  ACQUIRE). Promises that ignore it drift earlier than the slots by that much per round, and a
  burst of fifty rounds comes back seconds early. A slot whose answer is still awaited will be
  settled `lag.settle` later. A woken job reaches the limiter `lag.grant` ms
  after the moment it was told; it is told `lag.lead` ms early (that delay and a slot
  interval, up to a tenth of the window) and waits for its slot in the process, so only the
  rest, if any, is added per round.

  `spread` (ms, or nil): the positions take their slots no closer than that apart, so slots
  that free together are taken again over the window, not at once (a flood while another
  client spends; see ACQUIRE).
]]
local function kth(keys, ahead, cap, now, life, lag, inflight, spread)
  local round = life + lag.cycle + math.max(lag.grant - lag.lead, 0)
  local floor = '(' .. (now - life)
  cap = math.max(cap, 1)
  local held = 0
  for _, key in ipairs(keys) do held = held + redis.call('ZCOUNT', key, floor, '+inf') end
  local cycles = math.floor(ahead / cap)
  local position = ahead % cap
  local index = position + held - cap
  if index < 0 and not spread then return math.ceil(now + round * cycles) end
  local slots = {}
  if index >= 0 then
    for _, key in ipairs(keys) do
      local entries = redis.call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT', 0, index + 1)
      for i = 2, #entries, 2 do slots[#slots + 1] = {tonumber(entries[i]), entries[i - 1]} end
    end
    table.sort(slots, function(a, b) return a[1] < b[1] end)
  end
  local function frees(j)
    if j < 0 then return now end
    local slot = slots[j + 1]
    local at = slot[1] + life
    if redis.call('ZSCORE', inflight, slot[2]) then at = at + lag.settle end
    return at
  end
  if not spread then return math.ceil(frees(index) + round * cycles) end
  -- Spread: the positions ahead take their slots no closer than `spread` apart.
  local at = frees(held - cap)
  for i = 1, position do at = math.max(frees(i + held - cap), at + spread) end
  return math.ceil(at + round * cycles)
end
