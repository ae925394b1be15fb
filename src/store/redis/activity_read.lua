-- Sums a subject's window buckets (control loop). KEYS: for each bucket, its counters hash,
-- endpoints HyperLogLog and addresses HyperLogLog, in that order (one subject: one slot).
-- Returns requests, denied, reports, client_errors, first, last, gaps, gap_sum, gap_sum_sq,
-- distinct endpoints, distinct addresses, auth_failures, not_found, usage_sum (floats and the
-- 53-bit times as strings).
local r, d, p, e, g, a, n = 0, 0, 0, 0, 0, 0, 0
local gs, gq, u = 0, 0, 0
local first, last = nil, nil
local hlls_e, hlls_i = {}, {}
for i = 1, #KEYS, 3 do
  local v = redis.call('HMGET', KEYS[i], 'r', 'd', 'p', 'e', 'g', 'gs', 'gq', 'f', 'l', 'a', 'n', 'u')
  if v[1] then
    r = r + tonumber(v[1]); d = d + tonumber(v[2]); p = p + tonumber(v[3])
    e = e + tonumber(v[4]); g = g + tonumber(v[5])
    gs = gs + tonumber(v[6]); gq = gq + tonumber(v[7])
    a = a + (tonumber(v[10]) or 0); n = n + (tonumber(v[11]) or 0); u = u + (tonumber(v[12]) or 0)
    local f, l = tonumber(v[8]), tonumber(v[9])
    if f and (not first or f < first) then first = f end
    if l and (not last or l > last) then last = l end
  end
  table.insert(hlls_e, KEYS[i + 1])
  table.insert(hlls_i, KEYS[i + 2])
end
local de = redis.call('PFCOUNT', unpack(hlls_e))
local di = redis.call('PFCOUNT', unpack(hlls_i))
return {r, d, p, e, string.format('%.0f', first or -1), string.format('%.0f', last or 0), g,
        string.format('%.17g', gs), string.format('%.17g', gq), de, di, a, n,
        string.format('%.17g', u)}
