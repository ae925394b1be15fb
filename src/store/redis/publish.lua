-- Points readers at a new generation of standings, if the caller still holds the lease and the
-- generation is newer. KEYS: the lease, the pointer. ARGV: id, generation, ttl_ms.
-- Returns the previous generation, -1 when there was none, -2 when refused.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -2 end
local previous = tonumber(redis.call('GET', KEYS[2]))
if previous and previous >= tonumber(ARGV[2]) then return -2 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return previous or -1
