--[[
  The receiver's whole durable step for an event about an order, in one call on a single Redis
  (src/ingest/receive-order.ts puts it together): the event's dedupe mark is set unless it is
  there (then a duplicate: nothing is written), the snapshot written newer-only (snapshotPart /
  snapshotHint, lua/snapshot-*.lua), and unless a newer version is kept, the shop's live arrival
  is counted (countLive, src/queue/lua/live-arrivals-2.lua) and the order's sync job added
  exactly as BullMQ's own add does it (addLiveJob, lua/add-live-job.lua: bullmq's
  addPrioritizedJob for this one kind of job: deduplicated per order, the same job hash, events
  and marker). One script runs atomically and nothing in it can fail after its first write, so
  the mark is never there without the job.

  Input:
    KEYS[1..9]  the sync queue's keys in addPrioritizedJob's order: marker, meta, id,
                prioritized, delayed, completed, active, events, pc
    KEYS[10]    snapshot     the order's hash
    KEYS[11]    arrivals     the shop's arrival counter of this window (ARGV[14]'s)
    KEYS[12]    before       the shop's arrival counter of the window before
    KEYS[13]    seen         optional: the event's dedupe mark
    ARGV[1]     field        where the part's JSON goes ('o', 'f:<id>'), or '' for a hint
    ARGV[2]     vfield       where its version goes ('ov', 'fv:<id>'); '' for a hint
    ARGV[3]     json         the part; '' for a hint
    ARGV[4]     version      the part's version, or the hint's time (epoch ms)
    ARGV[5]     ttlMs        how long the snapshot is kept after this write
    ARGV[6]     liveAt       when the live event touched the order (ms)
    ARGV[7]     seenTtl      how long the mark is kept, seconds (with KEYS[13])
    ARGV[8]     windowMs     the shop's window
    ARGV[9]     limit        live jobs the shop's window takes before its jobs queue as a flood
    ARGV[10]    live         the live priority
    ARGV[11]    flood        the flood priority
    ARGV[12]    jobPrefix    the queue's key prefix ('<prefix>:sync:')
    ARGV[13]    name         the job's name
    ARGV[14]    timestamp    the job's timestamp (epoch ms), also the arrival count's clock
    ARGV[15]    dedupKey     the job's deduplication key
    ARGV[16]    data         the job's data (JSON)
    ARGV[17]    opts         the job's options as BullMQ stores them (JSON), without priority

  Output:
    { outcome } when no job was needed: 3 duplicate, 0 a newer version is kept (marked);
    { outcome, jobId, arrivals } otherwise: 1 stored, 2 the same version was kept
]]
local snapshot, arrivals, before, seen = KEYS[10], KEYS[11], KEYS[12], KEYS[13]

-- Everything that could fail outside Redis comes before the first write: a script is not rolled
-- back, and the mark must never stay without what it stands for. Once the script has written,
-- Redis lets it finish even past maxmemory (only the first write is checked).
local opts = cjson.decode(ARGV[17])
local dedupId = opts['de']['id']
local live, flood = tonumber(ARGV[10]), tonumber(ARGV[11])
opts['priority'] = live
local liveOpts = cjson.encode(opts)
opts['priority'] = flood
local floodOpts = cjson.encode(opts)

-- The mark first: already there, a duplicate and nothing is written. Written here, it stands for
-- what the rest of this script does: the snapshot, and the job unless a newer version is kept.
if seen and not redis.call('SET', seen, '1', 'NX', 'EX', ARGV[7]) then return { 3 } end
local put
if ARGV[1] == '' then
  put = snapshotHint({ snapshot }, { ARGV[4], ARGV[5], ARGV[6] })
else
  put = snapshotPart({ snapshot }, { ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6] })
end
if put == 0 then return { put } end

local count = countLive({ arrivals, before }, { ARGV[8], ARGV[14] })
local priority, jobOpts = live, liveOpts
if count > tonumber(ARGV[9]) then priority, jobOpts = flood, floodOpts end
local jobId = addLiveJob({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8],
  KEYS[9] }, ARGV[12], ARGV[13], ARGV[14], ARGV[15], dedupId, ARGV[16], jobOpts, priority)
return { put, jobId, count }
