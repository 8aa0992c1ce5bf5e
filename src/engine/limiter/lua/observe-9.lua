--[[
  Learns from a response's RateLimit headers what the server counts.

  When the server reports fewer requests left than we count (another client shares the
  store), the difference is added to `others`. When the other client's requests arrived is
  unknown, so they are taken as just now and live a full window (safe; RateLimit-Reset tells
  only when the oldest request leaves, and is rounded to whole seconds).

  The answer is compared with our requests as the server saw them when the answered one
  arrived: those in the ledger in the window before its grant (slots that have expired since,
  while its answer was on the way, were still counted), less our requests still in flight that
  left after it (`sent`, see SENT) or have not left at all. Comparing it with the ledger as it
  is now instead would mistake our own requests for another client's whenever the answer took
  longer than theirs: a burst of live orders, with dozens in flight, then fills the window with
  phantom requests that hold real slots for a whole window.

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

  The server is also the authority the other way: when it counts fewer than we do, the other
  client cannot have more in its window than it counted less ours it surely had (those whose
  answers came back before the answered one left, and that one). Learned requests beyond that
  are forgotten, newest first: our own requests a burst reordered on the way, learned as that
  client's on the safe side, would otherwise hold slots for a whole window.

  An answer no request of ours could have overtaken (none left after it) reads exactly how many
  requests the other client has in the window: kept in `lag` (`others`, `othersAt`) for ACQUIRE,
  which plans a flood's line with it and keeps counting it while no answer comes.

  A call made outside a slot (ARGV[6] = '') is compared with the ledger, every pending request
  left out (the safe side: one of ours that did arrive is counted twice for a window at most,
  never hides one of the other client's). `seen` holds when the server last told us its count
  (the answered request's leaving, when known): bulk feeders start slowly until a store's
  budget has been learned, and ACQUIRE lowers every cap by the other client's requests expected
  since.

  Input:
    KEYS[1] slots
    KEYS[2] seen         when the server last told us its count
    KEYS[3] live
    KEYS[4] others
    KEYS[5] pending
    KEYS[6] answered     grant times of answered slots (two windows)
    KEYS[7] doubt        a shortfall held until a later answer confirms it
    KEYS[8] sent         pending requests by the moment they left (µs)
    KEYS[9] lag          hash; `others`, `othersAt`: the other client's requests in the window,
                         as read from the last answer no request of ours could have overtaken
    ARGV[1] limit        the smaller of ours and the server's
    ARGV[2] windowMs
    ARGV[3] marginMs
    ARGV[4] serverRemaining
    ARGV[5] serverResetMs
    ARGV[6] answeredSlot the answered request's slot, or ''

  Output:
    how many other-client requests were learned
]]
--- @include "now"

local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local serverRemaining = tonumber(ARGV[4])
local others = redis.call('ZCOUNT', KEYS[4], '(' .. (now - window - margin), '+inf')
local ours
local after = 0
local before = 0
local answered = ARGV[6] ~= '' and redis.call('ZSCORE', KEYS[5], ARGV[6])
local left = answered and redis.call('ZSCORE', KEYS[8], ARGV[6])
-- The answer tells the server's count as of its request's arrival, which under load can be a
-- good part of a slot before we read it: what is unseen starts there (never earlier than a
-- later answer already said).
local seenAt = now
if left then seenAt = math.min(now, math.floor(tonumber(left) / 1000)) end
local seenBefore = tonumber(redis.call('GET', KEYS[2]) or '0')
local function markSeen() redis.call('SET', KEYS[2], math.max(seenAt, seenBefore), 'PX', window) end
if answered and left then
  local from = '(' .. (tonumber(answered) - window - margin)
  -- In flight and not counted: pending, less those that left before it (itself included).
  before = redis.call('ZCOUNT', KEYS[8], '-inf', left)
  after = redis.call('ZCOUNT', KEYS[8], '(' .. left, '+inf')
  ours = redis.call('ZCOUNT', KEYS[1], from, '+inf') + redis.call('ZCOUNT', KEYS[3], from, '+inf')
    - math.max(redis.call('ZCARD', KEYS[5]) - before, 0)
elseif answered then
  -- Not marked as sent (a client without the hook): grant order stands for send order.
  local from = '(' .. (tonumber(answered) - window - margin)
  after = redis.call('ZCOUNT', KEYS[5], '(' .. answered, '+inf')
  ours = redis.call('ZCOUNT', KEYS[1], from, '+inf') + redis.call('ZCOUNT', KEYS[3], from, '+inf')
    - after
else
  local from = '(' .. (now - window - margin)
  ours = redis.call('ZCOUNT', KEYS[1], from, '+inf') + redis.call('ZCOUNT', KEYS[3], from, '+inf')
    - math.max(redis.call('ZCARD', KEYS[5]) - 1, 0)
end
-- Bounded: one script call must stay short whatever a misconfigured budget says.
local missing = math.min(limit - ours - others - serverRemaining, 10000)
-- The answered request the only one of ours in flight (none left before it and is still
-- unanswered, none left after it): the answer tells exactly how many requests the other client
-- had in the window (what it spends per window), without the requests of ours that a burst
-- reorders on the way and `others` counts on the safe side. ACQUIRE plans a flood's line with
-- it and counts it while no answer comes. (One of ours that left before it but arrived after
-- it would make the count too low by one: in a clump of a dozen in flight, it read 11 for 20,
-- and the window went over.)
-- (Nothing to keep while no other client is seen at all: the common case costs no write. The
-- hash's expiry is SETTLE's, which runs after this for the same request.)
local read = math.max(limit - serverRemaining - ours, 0)
if answered and left and after == 0 and before == 1 and (read > 0 or others > 0) then
  -- Up at once, down by one a tenth of a window at most: our requests near the window's edge
  -- are counted by their settled moment (a little after they arrived), so a clump of them there
  -- reads the other client a few requests short (16 for 20), and a count too low puts the window
  -- over. A client that really slows down is followed within a window or two.
  local kept = redis.call('HMGET', KEYS[9], 'others', 'othersAt', 'othersDown')
  local last = tonumber(kept[1] or '')
  if last and now - tonumber(kept[2]) < 2 * window and read < last then
    if now - tonumber(kept[3] or '0') >= window / 10 then
      read = last - 1
      redis.call('HSET', KEYS[9], 'othersDown', now)
    else
      read = last
    end
  end
  redis.call('HSET', KEYS[9], 'others', read, 'othersAt', now)
end
if missing <= 0 then
  markSeen()
  redis.call('DEL', KEYS[7])
  -- The server is the authority when it counts fewer than we do: the other client cannot have
  -- more requests in its window than it counted less ours it surely had, those whose answers
  -- came back before the answered one left (and it). Learned requests beyond that (our own,
  -- reordered on the way and learned as the other client's, or that client slowing down) are
  -- forgotten, newest first, instead of holding slots for a whole window.
  -- (Not from a server at its limit: its count may be past it, and `remaining` stops at 0.)
  if others > 0 and left and serverRemaining > 0 then
    local leftMs = math.floor(tonumber(left) / 1000)
    local surely = 1
    for _, key in ipairs({KEYS[1], KEYS[3]}) do
      local slots = redis.call('ZRANGEBYSCORE', key, '(' .. (now - window), leftMs - margin)
      for _, member in ipairs(slots) do
        local granted = redis.call('ZSCORE', KEYS[6], member)
        if granted and tonumber(granted) > now - window then surely = surely + 1 end
      end
    end
    local excess = others - math.max(limit - serverRemaining - surely, 0)
    if excess > 0 then redis.call('ZREMRANGEBYRANK', KEYS[4], -excess, -1) end
  end
  return 0
end
local sure = math.max(missing - after, 0)
local doubt = missing - sure
local learned = sure
local heldBack = false
if others > 0 then
  -- Another client has been spending in this window: a shortfall is most likely its next
  -- request, and learning it late risks a 429 that stops the store for a whole Retry-After.
  -- (If it was ours after all, a later answer shows the surplus and it is forgotten.)
  learned = missing
  redis.call('DEL', KEYS[7])
elseif doubt > 0 then
  -- Confirmed only by an answer to a request that left after the doubt was recorded: every
  -- request that could have overtaken the doubted one had left by then, and counts as ours.
  local held = redis.call('HMGET', KEYS[7], 'count', 'at')
  if held[1] and left and tonumber(left) > tonumber(held[2]) then
    learned = learned + math.min(doubt, tonumber(held[1]))
    redis.call('DEL', KEYS[7])
  else
    heldBack = true
    if not held[1] then
      local t = redis.call('TIME')
      redis.call('HSET', KEYS[7], 'count', doubt, 'at', tonumber(t[1]) * 1000000 + tonumber(t[2]))
      redis.call('PEXPIRE', KEYS[7], window)
    end
  end
else
  redis.call('DEL', KEYS[7])
end
-- A shortfall held back may be the other client's request: the answer does not count as seen
-- (the requests expected from that client since the last clear answer stay counted).
if not heldBack or seenBefore == 0 then markSeen() end
if learned <= 0 then return 0 end
local score = now - margin
for i = 1, learned do
  redis.call('ZADD', KEYS[4], score, now .. ':' .. i .. ':' .. math.random(1000000))
end
redis.call('PEXPIRE', KEYS[4], window * 2 + margin)
return learned
