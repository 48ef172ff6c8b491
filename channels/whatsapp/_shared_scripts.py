"""The Lua scripts :mod:`channels.whatsapp.shared` runs in Redis, each one atomic there.

Logs are lists with the absolute index of their first entry in a key of its
own; messages are a hash and a list of their ids in order; a rate bucket is
a hash of its credit and when it was last counted.
"""

from __future__ import annotations

from typing import Final

__all__ = ["APPEND", "BEFORE_SEND", "CLEAR", "READ", "REMEMBER"]

# Append entries to a log (KEYS[1]) whose first index is KEYS[2]; keep at most ARGV[1] (0: all).
APPEND: Final = """
local n = redis.call('RPUSH', KEYS[1], unpack(ARGV, 2))
local cap = tonumber(ARGV[1])
if cap > 0 and n > cap then
  redis.call('LTRIM', KEYS[1], n - cap, -1)
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
# Drop a log's entries before absolute index ARGV[1] (-1: all): {first, length} after.
CLEAR: Final = """
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
local n = redis.call('LLEN', KEYS[1])
local cut = n
if tonumber(ARGV[1]) >= 0 then cut = math.min(math.max(tonumber(ARGV[1]) - first, 0), n) end
if cut > 0 then
  redis.call('LTRIM', KEYS[1], cut, -1)
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
