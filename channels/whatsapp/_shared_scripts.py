"""The Lua scripts :mod:`channels.whatsapp.shared` runs in Redis, each one atomic there.

Logs are lists with the absolute index of their first entry in a key of its
own; messages are a hash and a list of their ids in order; a rate bucket is
a hash of its credit and when it was last counted. Webhooks due later are
jobs (a hash of their JSON by id) in a sorted set by when they are due
(virtual microseconds); a claimed job moves to a sorted set of leases by
when its claim runs out (Redis's own milliseconds), with who holds it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AGAIN",
    "APPEND",
    "BEFORE_SEND",
    "CLAIM",
    "CLEAR",
    "DONE",
    "READ",
    "RELEASE",
    "REMEMBER",
    "TRIM",
]

# Append entries to a log (KEYS[1]) whose first index is KEYS[2], and their times (virtual us)
# to KEYS[3]; keep at most ARGV[1] (0: all). ARGV[2] is how many entries follow, then their times.
# The times list lines up with the log at its end (an older log may have no times for its head).
APPEND: Final = """
local k = tonumber(ARGV[2])
local n = redis.call('RPUSH', KEYS[1], unpack(ARGV, 3, 2 + k))
redis.call('RPUSH', KEYS[3], unpack(ARGV, 3 + k, 2 + 2 * k))
local cap = tonumber(ARGV[1])
if cap > 0 and n > cap then
  redis.call('LTRIM', KEYS[1], n - cap, -1)
  redis.call('LTRIM', KEYS[3], -cap, -1)
  redis.call('INCRBY', KEYS[2], n - cap)
end
return n
"""
# Read a log (KEYS[1], first index KEYS[2]) from absolute index ARGV[1]: {first, length, items}.
READ: Final = """
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
local n = redis.call('LLEN', KEYS[1])
local start = tonumber(ARGV[1]) - first
if start < 0 then start = 0 end
local items = {}
if start < n then items = redis.call('LRANGE', KEYS[1], start, -1) end
return {first, n, items}
"""
# Drop a log's entries before absolute index ARGV[1] (-1: all), and their times (KEYS[3]):
# {first, length} after.
CLEAR: Final = """
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
local n = redis.call('LLEN', KEYS[1])
local cut = n
if tonumber(ARGV[1]) >= 0 then cut = math.min(math.max(tonumber(ARGV[1]) - first, 0), n) end
if cut > 0 then
  redis.call('LTRIM', KEYS[1], cut, -1)
  if n - cut > 0 then redis.call('LTRIM', KEYS[3], cut - n, -1) else redis.call('DEL', KEYS[3]) end
  redis.call('INCRBY', KEYS[2], cut)
end
return {first + cut, n - cut}
"""
# Drop a log's entries (KEYS[1], first index KEYS[2], times KEYS[3]) older than ARGV[1] (virtual
# us), but none at or after ARGV[3] (-1: no such bound: an active conversation's turn), and
# keeping at most twice ARGV[2] (0: no count) whatever their age: {first, length} after.
TRIM: Final = """
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
local n = redis.call('LLEN', KEYS[1])
local m = redis.call('LLEN', KEYS[3])
local horizon, cap, kept = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cut = 0
local at = 0
while at < m do
  local times = redis.call('LRANGE', KEYS[3], at, at + 255)
  local done = false
  for j, raw in ipairs(times) do
    local t = tonumber(raw)
    if t >= horizon or (kept >= 0 and t >= kept) then done = true break end
    cut = n - m + at + j
  end
  if done or #times == 0 then break end
  at = at + #times
end
if cap > 0 then cut = math.max(cut, n - 2 * cap) end
if cut > 0 then
  redis.call('LTRIM', KEYS[1], cut, -1)
  if n - cut > 0 then redis.call('LTRIM', KEYS[3], cut - n, -1) else redis.call('DEL', KEYS[3]) end
  redis.call('INCRBY', KEYS[2], cut)
end
return {first + cut, n - cut}
"""
# Remember a message (hash KEYS[1], ids in order in KEYS[2]): ARGV cap (0: all), then id, json.
REMEMBER: Final = """
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
local n = redis.call('RPUSH', KEYS[2], ARGV[2])
local cap = tonumber(ARGV[1])
if cap > 0 and n > cap then
  local old = redis.call('LPOP', KEYS[2], n - cap)
  redis.call('HDEL', KEYS[1], unpack(old))
end
return n
"""
# Before a send: the shared clock's offset (KEYS[1]), and a token from each bucket KEYS[2..]
# in turn. A bucket is credit in units of 1/q microseconds (see SharedMeta.check_limits);
# ARGV: now (us), then cost, cap and q of each bucket. Answers {the bucket that refused
# (1-based; 0 for none), the credit it missed, the offset}; a refusal spends nothing there.
BEFORE_SEND: Final = """
local function spend(key, now, cost, cap, q)
  local state = redis.call('HMGET', key, 'credit', 'at')
  local credit, at = tonumber(state[1]), tonumber(state[2])
  if credit == nil then credit, at = cap, now end
  local elapsed = now - at
  if elapsed < 0 then elapsed = 0 end
  credit = math.min(cap, credit + elapsed * q)
  if credit < cost then return cost - credit end
  credit = credit - cost
  redis.call('HSET', key, 'credit', credit, 'at', math.max(now, at))
  redis.call('PEXPIRE', key, math.floor((cap - credit) / q / 1000) + 1000)
  return -1
end
local offset = tonumber(redis.call('GET', KEYS[1]) or '0')
local now = tonumber(ARGV[1])
for i = 2, #KEYS do
  local at = 2 + (i - 2) * 3
  local missing = spend(KEYS[i], now, tonumber(ARGV[at]), tonumber(ARGV[at + 1]),
    tonumber(ARGV[at + 2]))
  if missing >= 0 then return {i - 1, missing, offset} end
end
return {0, 0, offset}
"""

# Claim due jobs. KEYS: due, jobs, leases, holders. ARGV: now (virtual us), lease (ms), holder,
# at most how many, and a job id to claim that one only. Claims whose lease ran out are due
# again first (at their own due time, kept as text in the job's "due"), their holder noted as
# "!" (it may have sent them). Answers each job's JSON, then "!" if it was taken over, or "".
CLAIM: Final = """
local clock = redis.call('TIME')
local real = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', real)) do
  redis.call('ZREM', KEYS[3], id)
  redis.call('HSET', KEYS[4], id, '!')
  local job = redis.call('HGET', KEYS[2], id)
  if job then redis.call('ZADD', KEYS[1], cjson.decode(job)['due'], id) end
end
local ids = {}
if ARGV[5] and ARGV[5] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[5])
  if score and tonumber(score) <= tonumber(ARGV[1]) then ids = {ARGV[5]} end
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))
end
local claimed = {}
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local job = redis.call('HGET', KEYS[2], id)
  if job then
    local before = redis.call('HGET', KEYS[4], id)
    redis.call('ZADD', KEYS[3], real + tonumber(ARGV[2]), id)
    redis.call('HSET', KEYS[4], id, ARGV[3])
    table.insert(claimed, job)
    table.insert(claimed, before or '')
  end
end
return claimed
"""
# A claimed job is over, if ARGV[2] still holds it. KEYS: jobs, leases, holders. ARGV: id, holder.
DONE: Final = """
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
"""
# A claimed job is due again (a retry), if ARGV[2] still holds it. KEYS: due, jobs, leases,
# holders. ARGV: id, holder, when it is due (virtual us), its JSON.
AGAIN: Final = """
if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
return 1
"""
# Every job ARGV[1] holds is due again at once, for another process (this one stops).
# KEYS: due, jobs, leases, holders.
RELEASE: Final = """
local holders = redis.call('HGETALL', KEYS[4])
local released = 0
for i = 1, #holders, 2 do
  if holders[i + 1] == ARGV[1] then
    local id = holders[i]
    redis.call('ZREM', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    local job = redis.call('HGET', KEYS[2], id)
    if job then
      redis.call('ZADD', KEYS[1], cjson.decode(job)['due'], id)
      released = released + 1
    end
  end
end
return released
"""
