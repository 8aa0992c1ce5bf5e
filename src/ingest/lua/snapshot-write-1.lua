--[[
  One newer-only write of an order's snapshot hash: a versioned part (the whole order, fields
  o / ov, or a fulfillment from a fulfillments/* webhook, f:<id> / fv:<id>), kept only when
  strictly newer than the one held; or a hint (orders/edited, refunds/create: field h, the newest
  moment the order changed in a way its payload did not fully describe), which is always
  "stored": it never holds a version a job could skip.

  With a mark (the receiver's calls), the delivery's dedupe mark is checked in the same read: a
  mark already there answers 3 ("duplicate") before anything is written. The marks of the
  deliveries about an order are the hash's field m (includes/marks.lua); expired entries are
  dropped at each write, and at most MAX_MARKS are kept. The
  mark is written with the snapshot, in the same HSET: always with `markAlways` (the one script,
  where the job is added in the same call), else only for an older delivery, which needs no job
  (the caller marks the others once their job is queued, lua/snapshot-mark.lua).

  The hash's expiry is renewed only when less than half of ttlMs is left (PEXPIRE is a command
  of its own: Redis 7 cannot set it with HSET): the moment the hash expires is kept in its field
  x, and a hash without it (new, or written before x existed) gets its expiry in this call, so
  no hash is ever left without one. After any write at least half of ttlMs is left: 7 days by
  default, more than a mark's 72 hours.

  With `stamp` and a write that needs a job (1 or 2), the order's next job stamp is taken: the
  stamp of its last job (field j) + 1, or the caller's clock when later. The receiver makes the
  job's id from it ('<shop>|<order>|<stamp>'): new by construction, as an order's stamps only
  grow while its snapshot is kept, and start again from the clock after it is gone.

  Input:
    KEYS[1]  snapshot    the order's hash (o, ov, f:<id>, fv:<id>, h, lv, m, x, j)
    ARGV[1]  field       where the part's JSON goes ('o', 'f:<id>'), or '' for a hint
    ARGV[2]  vfield      where its version goes ('ov', 'fv:<id>'); '' for a hint
    ARGV[3]  json        the part; '' for a hint
    ARGV[4]  version     the part's version (its updated_at), or the hint's time (epoch ms)
    ARGV[5]  ttlMs       how long the snapshot is kept after a write (at least half of it)
    ARGV[6]  liveAt      when a live event touched the order (ms), or ''
    ARGV[7]  now         the caller's clock (epoch ms)
    ARGV[8]  mark        the delivery's mark id, or '' (no duplicate check, no mark)
    ARGV[9]  markTtl     how long the mark is kept, seconds
    ARGV[10] markAlways  '1': write the mark whatever the outcome; '': only for an older one
    ARGV[11] stamp       '1': take the job stamp when the write needs a job

  Output:
    1 stored, 2 the same version was kept, 0 a newer one was kept, 3 duplicate; with `stamp`,
    { 1 or 2, stamp } when the write needs a job
]]
--- @include "marks"
local snapshot = KEYS[1]
local field, vfield = ARGV[1], ARGV[2]
local incoming = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local liveAt = ARGV[6]
local now = tonumber(ARGV[7])
local mark = ARGV[8]
local hint = field == ''

local held = redis.call('HMGET', snapshot, hint and 'h' or vfield, 'm', 'x', 'j')
local nowSec = math.floor(now / 1000)
local marks = {}
if mark ~= '' then
  local found
  marks, found = liveMarks(held[2], nowSec, mark)
  if found then return 3 end
end

local current = tonumber(held[1] or '-1')
local stored
local writes = {}
if hint then
  stored = 1
  if incoming > current then writes = { 'h', ARGV[4] } end
elseif incoming > current then
  stored = 1
  writes = { field, ARGV[3], vfield, ARGV[4] }
elseif incoming == current then
  stored = 2
else
  stored = 0
end
if liveAt ~= '' then
  writes[#writes + 1] = 'lv'
  writes[#writes + 1] = liveAt
end
if mark ~= '' and (stored == 0 or ARGV[10] == '1') then
  writes[#writes + 1] = 'm'
  writes[#writes + 1] = withMark(marks, mark, nowSec, ARGV[9])
end
local stamp
if ARGV[11] == '1' and stored ~= 0 then
  stamp = math.max(tonumber(held[4] or '0') + 1, now)
  writes[#writes + 1] = 'j'
  writes[#writes + 1] = string.format('%.0f', stamp)
end
local renew = not held[3] or tonumber(held[3]) - now < ttl / 2
if renew then
  writes[#writes + 1] = 'x'
  writes[#writes + 1] = string.format('%.0f', now + ttl)
end
if #writes > 0 then redis.call('HSET', snapshot, unpack(writes)) end
if renew then redis.call('PEXPIRE', snapshot, ttl) end
if stamp then return { stored, stamp } end
return stored
