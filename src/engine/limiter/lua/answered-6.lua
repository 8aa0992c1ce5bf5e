--[[
  ANSWERED: a slot's answer is back, in one call: OBSERVE reads its RateLimit headers (when it
  had them), then SETTLE moves the slot to the answer's moment (now). One script where there
  were two, run the moment the answer comes (the provider client's hook), so the slot is
  settled with no delay at all; SETTLE alone remains for a request that got no answer.

  Input:
    KEYS[1] slots
    KEYS[2] live
    KEYS[3] others
    KEYS[4] inflight     our requests in flight (includes/inflight.lua)
    KEYS[5] answered     grant times of answered slots (two windows), kept while another
                         client is about (see includes/settle.lua)
    KEYS[6] lag          hash (lag.lua): OBSERVE's `seen`, `others*`, `doubt*`; SETTLE's
                         `settle`; read once and written once per call
    ARGV[1] limit        the smaller of ours and the server's
    ARGV[2] windowMs
    ARGV[3] marginMs
    ARGV[4] serverRemaining  '' when the answer had no RateLimit headers (nothing to learn)
    ARGV[5] serverResetMs
    ARGV[6] answeredSlot the answered request's slot
    ARGV[7] priority     'live' | 'bulk': the slot ledger it is in
    ARGV[8] grantedAtMs  the slot's grant time as ACQUIRE told it, or '' (then read)
    ARGV[9] leftUs       the moment its request left as ACQUIRE or SENT told it, or '' (then
                         read)

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
local serverRemaining = tonumber(ARGV[4] ~= '' and ARGV[4] or '-1')
-- (ARGV[5], serverResetMs, is not read: RateLimit-Reset is rounded to whole seconds.)
local answeredSlot = ARGV[6]
local first = ARGV[7]

--- @include "now"
--- @include "lag"
--- @include "inflight"
--- @include "inflight-take"
-- The answered slot, out of the set of requests in flight.
local answered, left = takeInflight(answeredSlot, ARGV[8], ARGV[9])
--- @include "observe"
--- @include "settle"

local learned = 0
if serverRemaining >= 0 then learned = observe() end
settle(answeredSlot, 0, answered, othersCounted > 0 or learned > 0)
flushLag()
return learned
