--[[
  Called when a request's answer (or its failure) is back: the server counted the request when it arrived,
  which was no later than the answer, so the slot is moved to start no earlier than that moment
  less the margin. The answer's moment is `now - ARGV[4]`: the caller measured how long ago the
  answer came on its own clock, before this call left, so the moment read here is never earlier
  than the real one.
  However long the request took to leave (a busy event loop, a slow connection), the ledger then
  frees the slot no earlier than the server does. The slot is no longer pending; its grant time
  moves to `answered` (kept two windows), which OBSERVE reads answers against. How far slots
  move is averaged in `lag` (field `settle`): waiters are promised their slots that much later.

  Input:
    KEYS[1] slots
    KEYS[2] live
    KEYS[3] pending
    KEYS[4] answered
    KEYS[5] lag
    KEYS[6] sent
    ARGV[1] member
    ARGV[2] marginMs
    ARGV[3] windowMs
    ARGV[4] answeredAgoMs  how long before this call the answer came (0: now)
    ARGV[5] priority       'live' | 'bulk' | '': the slot ledger to look in first

  Output:
    1 when the slot moved later, else 0
]]
-- KEYS
local slotsKey = KEYS[1]
local liveKey = KEYS[2]
local pendingKey = KEYS[3]
local answeredKey = KEYS[4]
local lagKey = KEYS[5]
local sentKey = KEYS[6]
-- ARGV
local member = ARGV[1]
local margin = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local answeredAgoMs = tonumber(ARGV[4] or '0')
local first = ARGV[5] or ''


--- @include "now"
--- @include "lag"
--- @include "settle"

local moved = settle(member, answeredAgoMs, nil)
flushLag()
return moved
