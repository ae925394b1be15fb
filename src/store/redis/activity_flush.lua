-- Adds one daemon's interval of a subject's activity to a window bucket (control loop).
-- KEYS: counters hash, endpoints HyperLogLog, addresses HyperLogLog (one subject: one slot).
-- ARGV: ttl_ms, requests, denied, reports, client_errors, first, last, gaps, gap_sum, gap_sum_sq,
--       auth_failures, not_found, usage_sum, endpoint count, endpoint hashes..., address hashes...
local h = KEYS[1]
local ttl = ARGV[1]
redis.call('HINCRBY', h, 'r', ARGV[2])
redis.call('HINCRBY', h, 'd', ARGV[3])
redis.call('HINCRBY', h, 'p', ARGV[4])
redis.call('HINCRBY', h, 'e', ARGV[5])
redis.call('HINCRBY', h, 'g', ARGV[8])
redis.call('HINCRBYFLOAT', h, 'gs', ARGV[9])
redis.call('HINCRBYFLOAT', h, 'gq', ARGV[10])
redis.call('HINCRBY', h, 'a', ARGV[11])
redis.call('HINCRBY', h, 'n', ARGV[12])
redis.call('HINCRBYFLOAT', h, 'u', ARGV[13])
if tonumber(ARGV[2]) > 0 then
  local first = tonumber(redis.call('HGET', h, 'f'))
  if not first or tonumber(ARGV[6]) < first then redis.call('HSET', h, 'f', ARGV[6]) end
  local last = tonumber(redis.call('HGET', h, 'l'))
  if not last or tonumber(ARGV[7]) > last then redis.call('HSET', h, 'l', ARGV[7]) end
end
redis.call('PEXPIRE', h, ttl)
local n = tonumber(ARGV[14])
if n > 0 then
  redis.call('PFADD', KEYS[2], unpack(ARGV, 15, 14 + n))
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if #ARGV > 14 + n then
  redis.call('PFADD', KEYS[3], unpack(ARGV, 15 + n, #ARGV))
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return 1
