--[[
  BullMQ's addPrioritizedJob (bullmq 6.7, scripts/addPrioritizedJob-9.lua) for the one kind of
  job the receiver adds: a new job with a priority, no delay, no parent, no repeat, deduplicated
  by id with keepLastIfActive and no ttl. Every step that job takes there is taken here, in its
  order, with the same arguments, so the keys it leaves are the same (the job hash, the
  deduplication key and its next-job hash, the prioritized set and its counter, the marker, the
  events); test/ingest/receive-order.test.ts compares the two on every path. Two reads of it are
  not made:
  - the job id is the caller's, new by construction ('<shop>|<order>|<stamp>', see
    snapshot-write.lua), where BullMQ takes a counter's next value (INCR) or, given an id,
    checks that no job has it (EXISTS). BullMQ's add gets the same id on the cluster's path;
  - the queue meta is not read (HMGET): its events cap is the one the queue was opened with
    (BullMQ's Queue writes it there), and the marker that wakes a worker is always added, where
    BullMQ leaves it out while the queue is paused or at its global concurrency. A worker woken
    then takes no job (its own script checks both) and waits again: a wake-up, nothing else. The
    connector never pauses the sync queue nor sets its global concurrency; an operator can, on
    the dashboard.
  What BullMQ's script does for other jobs (delay, parent, repeat, replace, ttl, extend,
  reschedule) is not here: a job that needs it must go through BullMQ's add.

  Called as a local function of receive-order.lua, with:
    KEYS      the queue's keys in addPrioritizedJob's order: marker, meta, id, prioritized,
              delayed, completed, active, events, pc
    prefix    the queue's key prefix ('<prefix>:sync:')
    name      the job's name
    timestamp the job's timestamp (epoch ms, a string)
    dedupKey  the deduplication key ('<prefix>:sync:de:<id>')
    dedupId   the deduplication id
    data      the job's data (JSON)
    optsJson  the job's options as BullMQ stores them, priority included (cjson.encode)
    priority  the job's priority (a number)
    jobId     the job's id, new by construction
    maxEvents the events stream's cap (the queue's, 10,000 unless set)

  Output: the job's id, or the id of the job it was deduplicated into (as BullMQ's add)
]]
local rcall = redis.call
local markerKey, priorityKey = KEYS[1], KEYS[4]
local eventsKey, priorityCounterKey = KEYS[8], KEYS[9]

-- deduplicateJob: keepLastIfActive without ttl sets the key with no expiry.
-- (SET NX GET would save the GET, but needs Redis 7; BullMQ runs on Redis 5 and later.)
if not rcall('SET', dedupKey, jobId, 'NX') then
  local current = rcall('GET', dedupKey)
  local recovered = false
  -- recoverStaleDeduplicationKey: the key outlived its job (an outage).
  if rcall('PTTL', dedupKey) == -1 and rcall('EXISTS', prefix .. current) == 0 then
    rcall('DEL', dedupKey)
    rcall('DEL', prefix .. 'dn:' .. dedupId)
    rcall('SET', dedupKey, jobId)
    recovered = true
  end
  if not recovered then
    -- storeDeduplicatedNextJob: while the order's job runs, keep this one to run after it.
    local pos = redis.pcall('LPOS', prefix .. 'active', current)
    if type(pos) == 'table' and pos.err then
      pos = nil
      for _, v in pairs(rcall('LRANGE', prefix .. 'active', 0, -1)) do
        if v == current then pos = 1 end
      end
    end
    if pos then
      local nextKey = prefix .. 'dn:' .. dedupId
      rcall('DEL', nextKey)
      rcall('HSET', nextKey, 'name', name, 'data', data, 'opts', optsJson, 'jid', jobId)
      rcall('PERSIST', dedupKey)
    end
    rcall('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'deduplicated', 'jobId',
      current, 'deduplicationId', dedupId, 'deduplicatedJobId', jobId)
    return current
  end
end

-- storeJob
rcall('HMSET', prefix .. jobId, 'name', name, 'data', data, 'opts', optsJson, 'timestamp',
  timestamp, 'delay', 0, 'priority', priority, 'deid', dedupId)
rcall('XADD', eventsKey, '*', 'event', 'added', 'jobId', jobId, 'name', name)

-- addJobWithPriority (the marker whether or not the queue is paused or maxed: see above)
local score = priority * 0x100000000 + rcall('INCR', priorityCounterKey) % 0x100000000
rcall('ZADD', priorityKey, score, jobId)
rcall('ZADD', markerKey, 0, '0')
rcall('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
return jobId
