--[[
  OBSERVE: learns from a response's RateLimit headers what the server counts (ADR 0001).

  When the server reports fewer requests left than we count (another client shares the
  store), the difference is added to `others`. When the other client's requests arrived is
  unknown, so they are taken as just now and live a full window (safe; RateLimit-Reset tells
  only when the oldest request leaves, and is rounded to whole seconds). Each step is a
  fragment in includes/, run inline in this order:

    observe-ours    our requests as the server saw them when the answered one arrived
    observe-read    the other client's requests per window, from an answer none overtook
    observe-forget  nothing missing: the server is the authority; learned excess is forgotten
    observe-doubt   a shortfall our own reordered requests may explain is held until confirmed
    (here)          the other client's requests learned, as of now, for a window

  Run alone for a call made outside a slot (ANSWERED runs it for a slot's answer): compared
  with the ledger, every request of ours in flight left out (the safe side: one of ours that did arrive is counted twice for a window at
  most, never hides one of the other client's). `seen` holds when the server last told us its
  count (the answered request's leaving, when known; in `lag`, see lag.lua): bulk feeders start slowly until a store's
  budget has been learned, and ACQUIRE lowers every cap by the other client's requests expected
  since.

  Input:
    KEYS[1] slots
    KEYS[2] live
    KEYS[3] others
    KEYS[4] inflight     our requests in flight (includes/inflight.lua)
    KEYS[5] answered     grant times of answered slots (two windows)
    KEYS[6] lag          hash (lag.lua): `seen`, when the server last told us its count;
                         `others`, `othersAt`, the other client's requests in the window as
                         read from the last answer no request of ours could have overtaken;
                         `doubt*`, a shortfall held until a later answer confirms it
    ARGV[1] limit        the smaller of ours and the server's
    ARGV[2] windowMs
    ARGV[3] marginMs
    ARGV[4] serverRemaining
    ARGV[5] serverResetMs

  Output:
    how many other-client requests were learned
]]
-- KEYS
local slotsKey = KEYS[1]
local liveKey = KEYS[2]
local othersKey = KEYS[3]
local inflightKey = KEYS[4]
local answeredKey = KEYS[5]
local lagKey = KEYS[6]
-- ARGV
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local serverRemaining = tonumber(ARGV[4])
-- (ARGV[5], serverResetMs, is not read: RateLimit-Reset is rounded to whole seconds.)

--- @include "now"
--- @include "lag"
--- @include "inflight"
-- (A call outside a slot: no answered slot; see ANSWERED for one.)
local answered, left = false, nil
--- @include "observe"

local learned = observe()
flushLag()
return learned
