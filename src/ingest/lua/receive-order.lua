--[[
  The receiver's whole durable step for an event about an order, in one call on a single Redis
  (src/ingest/receive-order.ts puts it together): the snapshot written newer-only with the
  event's dedupe mark checked and written in the same read and write (snapshotWrite,
  lua/snapshot-write.lua: a mark already there is a duplicate and nothing is written), and
  unless a newer version is kept, the shop's live arrival counted (countLive,
  src/queue/lua/live-arrivals-2.lua) and the order's sync job added as BullMQ's own add does it
  (addLiveJob, lua/add-live-job.lua: bullmq's addPrioritizedJob for this one kind of job:
  deduplicated per order, the same job hash, events and marker), with the id
  '<shop>|<order>|<stamp>' from the stamp the snapshot write took. One script runs atomically and
  nothing in it can fail after its first write, so the mark is never there without the job.

  Input:
    KEYS[1..9]  the sync queue's keys in addPrioritizedJob's order: marker, meta, id,
                prioritized, delayed, completed, active, events, pc
    KEYS[10]    snapshot     the order's hash
    KEYS[11]    arrivals     the shop's arrival counter of this window (ARGV[14]'s)
    KEYS[12]    before       the shop's arrival counter of the window before
    ARGV[1]     field        where the part's JSON goes ('o', 'f:<id>'), or '' for a hint
    ARGV[2]     vfield       where its version goes ('ov', 'fv:<id>'); '' for a hint
    ARGV[3]     json         the part; '' for a hint
    ARGV[4]     version      the part's version, or the hint's time (epoch ms)
    ARGV[5]     ttlMs        how long the snapshot is kept after a write (at least half)
    ARGV[6]     liveAt       when the live event touched the order (ms)
    ARGV[7]     mark         the event's mark id, or '' (no duplicate check, no mark)
    ARGV[8]     markTtl      how long the mark is kept, seconds
    ARGV[9]     windowMs     the shop's window
    ARGV[10]    limit        live jobs the shop's window takes before its jobs queue as a flood
    ARGV[11]    live         the live priority
    ARGV[12]    flood        the flood priority
    ARGV[13]    jobPrefix    the queue's key prefix ('<prefix>:sync:')
    ARGV[14]    name         the job's name
    ARGV[15]    timestamp    the job's timestamp (epoch ms): the arrival count's and the
                             snapshot's clock too
    ARGV[16]    dedupKey     the job's deduplication key
    ARGV[17]    data         the job's data (JSON)
    ARGV[18]    opts         the job's options as BullMQ stores them (JSON), without priority
    ARGV[19]    idPrefix     the job id's prefix, '<shop>|<order>|'
    ARGV[20]    maxEvents    the queue's events cap

  Output:
    { outcome } when no job was needed: 3 duplicate, 0 a newer version is kept (marked);
    { outcome, jobId, arrivals } otherwise: 1 stored, 2 the same version was kept
]]
local snapshot, arrivals, before = KEYS[10], KEYS[11], KEYS[12]

-- Everything that could fail outside Redis comes before the first write: a script is not rolled
-- back, and the mark must never stay without what it stands for. Once the script has written,
-- Redis lets it finish even past maxmemory (only the first write is checked).
-- The options as BullMQ stores them hold the job's id, known once the snapshot write took the
-- stamp: they are encoded here once with a stand-in of an id's form (what could fail, fails
-- here), and again with the id.
local opts = cjson.decode(ARGV[18])
local dedupId = opts['de']['id']
local live, flood = tonumber(ARGV[11]), tonumber(ARGV[12])
opts['jobId'] = ARGV[19] .. '0'
opts['priority'] = flood
cjson.encode(opts)

local put = snapshotWrite({ snapshot }, { ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6],
  ARGV[15], ARGV[7], ARGV[8], '1', '1' })
if type(put) ~= 'table' then return { put } end
local jobId = ARGV[19] .. string.format('%.0f', put[2])

local count = countLive({ arrivals, before }, { ARGV[9], ARGV[15] })
local priority = live
if count > tonumber(ARGV[10]) then priority = flood end
opts['jobId'] = jobId
opts['priority'] = priority
local jobOpts = cjson.encode(opts)
jobId = addLiveJob({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8],
  KEYS[9] }, ARGV[13], ARGV[14], ARGV[15], ARGV[16], dedupId, ARGV[17], jobOpts, priority, jobId,
  ARGV[20])
return { put[1], jobId, count }
