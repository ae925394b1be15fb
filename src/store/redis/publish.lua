-- Publishes the leader's standings as one value, if the caller still holds the lease and the
-- generation is newer than the one in place. KEYS: the lease, the standings hash.
-- ARGV: id, generation, ttl_ms, standings. Returns 1 when published, 0 when refused.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local previous = tonumber(redis.call('HGET', KEYS[2], 'g'))
if previous and previous >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], 'g', ARGV[2], 'v', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
