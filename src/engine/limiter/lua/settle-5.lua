--[[
  Called when a request's answer (or its failure) is back: the server counted the request when it arrived,
  which was no later than the answer, so the slot is moved to start no earlier than that moment
  less the margin. The answer's moment is `now - ARGV[4]`: the caller measured how long ago the
  answer came on its own clock, before this call left, so the moment read here is never earlier
  than the real one.
  However long the request took to leave (a busy event loop, a slow connection), the ledger then
  frees the slot no earlier than the server does. The slot is no longer in flight. How far
  slots move is averaged in `lag` (field `settle`): waiters are promised their slots that much
  later. (No answer read: its grant time is not kept in `answered`; see includes/settle.lua.)

  Input:
    KEYS[1] slots
    KEYS[2] live
    KEYS[3] inflight
    KEYS[4] answered
    KEYS[5] lag
    ARGV[1] member
    ARGV[2] marginMs
    ARGV[3] windowMs
    ARGV[4] answeredAgoMs  how long before this call the answer came (0: now)
    ARGV[5] priority       'live' | 'bulk' | '': the slot ledger to look in first
    ARGV[6] grantedAtMs    the slot's grant time as ACQUIRE told it, or '' (then read)

  Output:
    1 when the slot moved later, else 0
]]
-- KEYS
local slotsKey = KEYS[1]
local liveKey = KEYS[2]
local inflightKey = KEYS[3]
local answeredKey = KEYS[4]
local lagKey = KEYS[5]
-- ARGV
local member = ARGV[1]
local margin = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local answeredAgoMs = tonumber(ARGV[4] or '0')
local first = ARGV[5] or ''


--- @include "now"
--- @include "lag"
--- @include "inflight"
--- @include "inflight-take"
--- @include "settle"

-- (When it left is not read here.)
local granted = takeInflight(member, ARGV[6] or '', false)
local moved = settle(member, answeredAgoMs, granted, false)
flushLag()
return moved
