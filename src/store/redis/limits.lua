-- ratewarden: check, and consume or refund, every limit of one request, atomically.
--
-- The same algorithms as src/algorithm/*.rs, step for step, on whole microseconds. Lua numbers
-- are doubles, exact for integers below 2^53; divisions go through idiv/cdiv so they are exact,
-- except a gcra debt converted to another interval (rescaled), which both sides compute in
-- doubles with the same operations, so they agree to the microsecond even where it rounds.
-- Timestamps and counts are far below that; the products requests x window (in us) stay below
-- it for up to ~2.5 million requests an hour (the daemon warns about larger limits of the policy
-- and its envoy folder, lifted by the load factors the policy allows; a gRPC call's own
-- override is not checked).
--
-- ARGV[1]  mode: "apply" (consume if every enforced limit passes), "dry" (evaluate only),
--          "refund" (undo a consumption made at ARGV[2])
-- ARGV[2]  now in microseconds since the epoch, or 0 for the server's TIME
-- ARGV[3]  number of checks; then 13 values per check:
--          algorithm, window, requests, burst, cost, enforce (1/0),
--          probe 1 requests, probe 1 burst, probe 2 requests, probe 2 burst (-1: no probe),
--          slowest: requests per window at the smallest scale the limit can take (a
--          token_bucket key lives until it would have refilled at that rate),
--          written requests, written burst: the limit as written (-1: the same as checked)
-- KEYS     one key per check; a sliding_log check has a second key (its running total)
--
-- Returns {admitted, now, then 10 values per check: allowed, limit, remaining, reset_after,
--          retry_after (-1: never), probe 1 allowed, probe 2 allowed, and allowed, limit and
--          remaining at the limit as written}

local LOG, WINDOW, FIXED, BUCKET, GCRA = 1, 2, 3, 4, 5
local TAGS = {'L', 'S', 'F', 'T', 'G'}

local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b)
  local q = idiv(a, b)
  if q * b < a then q = q + 1 end
  return q
end
local function num(x) return string.format('%.0f', x) end
local function interval(window, requests)
  if requests <= 0 then return nil end
  return math.max(cdiv(window, requests), 1)
end
local function never(limit, remaining, reset) return {0, limit, remaining, reset, -1} end

-- State: "F start count", "S start current previous", "T used last", "G tat interval" (or
-- "G tat", written before the interval was kept: the current rate's); a log is a
-- sorted set of "time:cost" members scored by time, with its total in a second key.
local function read(c, values)
  if c.alg == LOG then
    -- A total without its log is left from an earlier life of the name (the limit became
    -- another algorithm and came back): it counts nothing.
    if redis.call('TYPE', c.key).ok ~= 'zset' then return {total = 0} end
    return {total = tonumber(values[c.tkey_at]) or 0}
  end
  -- MGET answers false for a missing key and for one holding another type.
  local v = values[c.key_at]
  if type(v) ~= 'string' then return nil end
  local tag, a, b, d = string.match(v, '^(%a) (%d+) ?(%d*) ?(%d*)$')
  local want = TAGS[c.alg]
  if tag ~= want then return nil end
  return {a = tonumber(a), b = tonumber(b), d = tonumber(d)}
end

-- fixed_window ---------------------------------------------------------------------------
-- A clock that stepped back behind the stored window (another daemon's, a failover) is taken
-- as at that window's start: counted usage is never dropped for an older window.
local function not_before(st, now)
  if st and st.a > now then return st.a end
  return now
end

local function fixed_peek(st, now, w, limit, cost)
  now = not_before(st, now)
  local start = now - now % w
  local until_end = start + w - now
  -- A stored window starting inside this one (a reload lengthened `window`) still counts.
  local count = (st and st.a >= start) and st.b or 0
  local reset = count > 0 and until_end or 0
  if cost > limit then return never(limit, math.max(limit - count, 0), reset) end
  if count + cost <= limit then return {1, limit, limit - count - cost, until_end, 0} end
  return {0, limit, math.max(limit - count, 0), reset, until_end}
end
local function fixed_consume(c, st, now, cost)
  now = not_before(st, now)
  local w = c.w
  local start = now - now % w
  local count = ((st and st.a >= start) and st.b or 0) + cost
  return 'F ' .. num(start) .. ' ' .. num(count), start + w
end

-- sliding_window -------------------------------------------------------------------------
local function counters(st, start, w)
  if not st then return 0, 0 end
  -- As in Rust: a stored window starting strictly inside this one or the previous one is left
  -- from before a reload changed `window`; both its counts go where it lies.
  if st.a == start then return st.d, st.b end
  if st.a > start then return 0, st.b + st.d end
  if st.a + w == start then return st.b, 0 end
  if st.a + w > start then return st.b + st.d, 0 end
  return 0, 0
end
local function window_peek(st, now, w, limit, cost)
  now = not_before(st, now)
  local start = now - now % w
  local elapsed = now - start
  local prev, cur = counters(st, start, w)
  local weighted = prev * (w - elapsed) + cur * w
  local capacity = limit * w
  local before = capacity > weighted and idiv(capacity - weighted, w) or 0
  local reset = 0
  if cur > 0 then reset = start + 2 * w - now elseif prev > 0 then reset = start + w - now end
  if cost > limit then return never(limit, before, reset) end
  local needed = weighted + cost * w
  if needed <= capacity then
    return {1, limit, idiv(capacity - needed, w), start + 2 * w - now, 0}
  end
  local left = w - elapsed
  if prev > 0 and cur + cost <= limit then
    local t = cdiv(prev * left + (cur + cost) * w - limit * w, prev)
    if t < left then return {0, limit, before, reset, t} end
  end
  local u = 0
  if cur + cost > limit then u = cdiv((cur + cost - limit) * w, cur) end
  return {0, limit, before, reset, left + u}
end
local function window_consume(c, st, now, cost)
  now = not_before(st, now)
  local w = c.w
  local start = now - now % w
  local prev, cur = counters(st, start, w)
  return 'S ' .. num(start) .. ' ' .. num(cur + cost) .. ' ' .. num(prev), start + 2 * w
end

-- token_bucket ---------------------------------------------------------------------------
local function refilled(st, now, iv)
  if st and st.a > 0 then
    local tokens = idiv(math.max(now - st.b, 0), iv)
    if tokens >= st.a then return 0, now end
    return st.a - tokens, st.b + tokens * iv
  end
  return 0, now
end
local function bucket_peek(st, now, w, requests, burst, cost)
  local iv = interval(w, requests)
  if not iv or burst <= 0 then return never(burst, 0, 0) end
  local used, last = refilled(st, now, iv)
  local function full_at(u) return math.max(last + u * iv - now, 0) end
  if cost > burst then return never(burst, math.max(burst - used, 0), full_at(used)) end
  if used + cost <= burst then return {1, burst, burst - used - cost, full_at(used + cost), 0} end
  return {0, burst, math.max(burst - used, 0), full_at(used), full_at(used + cost - burst)}
end
local function bucket_consume(c, st, now, cost)
  local iv = interval(c.w, c.req) or c.w
  local used, last = refilled(st, now, iv)
  used = used + cost
  -- Kept until refilled at the slowest rate the limit can take: a limit scaled down later
  -- refills slower, and must still find the usage.
  local slow = interval(c.w, math.max(c.slow, 1)) or c.w
  return 'T ' .. num(used) .. ' ' .. num(last), last + used * math.max(iv, slow)
end

-- gcra -----------------------------------------------------------------------------------
-- The debt (TAT - now) is read in the interval it was counted at (st.b; a state without one
-- is the current rate's), against the burst in force, and converted when more is counted, so
-- scaling a limit never changes the usage already counted (src/algorithm/gcra.rs).
-- Whole emissions left before the debt reaches the tolerance.
local function gcra_remaining(tolerance, debt, t)
  if tolerance > debt then return idiv(tolerance - debt, t) end
  return 0
end
local function gcra_debt(st, now, current)
  if not st or st.a <= now then return 0, current end
  return st.a - now, math.max(st.b or current, 1)
end
local function rescaled(debt, from, to)
  if from == to or debt == 0 then return debt end
  return math.ceil(debt * to / from)
end
local function gcra_peek(st, now, w, requests, burst, cost)
  local current = interval(w, requests)
  if not current or burst <= 0 then return never(burst, 0, 0) end
  local debt, t = gcra_debt(st, now, current)
  local tolerance = burst * t
  if cost > burst then return never(burst, gcra_remaining(tolerance, debt, t), debt) end
  local next_debt = debt + cost * t
  if next_debt <= tolerance then
    -- The reset is the debt counting leaves: converted to the interval in force (gcra_consume).
    local reset = rescaled(debt, t, current) + cost * current
    return {1, burst, gcra_remaining(tolerance, next_debt, t), reset, 0}
  end
  return {0, burst, gcra_remaining(tolerance, debt, t), debt, next_debt - tolerance}
end
local function gcra_consume(c, st, now, cost)
  local t = math.max(interval(c.w, c.req) or c.w, 1)
  local debt, counted_at = gcra_debt(st, now, t)
  local tat = now + rescaled(debt, counted_at, t) + cost * t
  return 'G ' .. num(tat) .. ' ' .. num(t), tat
end

-- sliding_log ----------------------------------------------------------------------------
local function entry_cost(member) return tonumber(string.match(member, ':(%d+)$')) or 0 end
local function log_entries(c, min, max)
  local r = redis.pcall('ZRANGEBYSCORE', c.key, min, max, 'WITHSCORES')
  if type(r) ~= 'table' or r.err then return {} end
  return r
end
local function log_peek(c, st, now, w, limit, cost)
  local horizon = now - w
  if not st.expired then
    -- Shared by the outcome and the probes: read the log once per check.
    st.expired = log_entries(c, '-inf', num(horizon))
    local used = st.total
    for i = 1, #st.expired, 2 do used = used - entry_cost(st.expired[i]) end
    st.used = math.max(used, 0)
    local newest = redis.pcall('ZRANGE', c.key, -1, -1, 'WITHSCORES')
    if type(newest) == 'table' and not newest.err and #newest > 0 and tonumber(newest[2]) > horizon then
      st.newest = tonumber(newest[2])
    end
  end
  local used = st.used
  local reset = st.newest and math.max(st.newest + w - now, 0) or 0
  if cost > limit then return never(limit, math.max(limit - used, 0), reset) end
  if used + cost <= limit then return {1, limit, limit - used - cost, w, 0} end
  -- Denied: walk the live entries, oldest first, until enough have left the window.
  local live = log_entries(c, '(' .. num(horizon), '+inf')
  local left, retry = used, 0
  for i = 1, #live, 2 do
    left = left - entry_cost(live[i])
    if left + cost <= limit then retry = math.max(tonumber(live[i + 1]) + w - now, 0) break end
  end
  return {0, limit, math.max(limit - used, 0), reset, retry}
end
local function log_consume(c, st, now, cost)
  local horizon = now - c.w
  local total = st.total
  local kind = redis.call('TYPE', c.key).ok
  if kind ~= 'zset' and kind ~= 'none' then
    -- The limit kept its name but changed algorithm: start it afresh.
    redis.call('DEL', c.key)
    total = 0
  end
  local expired = log_entries(c, '-inf', num(horizon))
  for i = 1, #expired, 2 do total = total - entry_cost(expired[i]) end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', c.key, '-inf', num(horizon)) end
  local newest = redis.call('ZRANGE', c.key, -1, -1, 'WITHSCORES')
  local at = now
  if #newest > 0 and tonumber(newest[2]) >= now then
    -- A clock that stepped back records at the newest time, so the log stays ordered.
    at = tonumber(newest[2])
    cost = cost + entry_cost(newest[1])
    total = total - entry_cost(newest[1])
    redis.call('ZREM', c.key, newest[1])
  end
  redis.call('ZADD', c.key, num(at), num(at) .. ':' .. num(cost))
  redis.call('SET', c.tkey, num(total + cost))
  return at + c.w
end
local function log_refund(c, st, since, now, cost)
  -- Take back `cost` from the oldest entries at or after the consumption: its own entry (or the
  -- newer one a clock step merged it into). Concurrent refunds each find their own so; taking
  -- the newest would let one take another's, which then found nothing and left its units
  -- charged. What is not found there (another refund took it) comes from the newest live
  -- entries before it, so the total always goes down by `cost` while the log holds that much.
  local left, removed = cost, 0
  -- A partial take rewrites an entry (ZREM, then ZADD): of a one-entry log, that deletes the
  -- key and makes a new one without a TTL. The log keeps the TTL it had.
  local ttl = redis.call('PTTL', c.key)  -- -2 none, -1 none set (left so), 0 expiring now
  local function take(entries)
    for i = 1, #entries - 1, 2 do
      if left <= 0 then return end
      local member, at = entries[i], entries[i + 1]
      local have = entry_cost(member)
      local taken = math.min(have, left)
      redis.call('ZREM', c.key, member)
      if have > taken then redis.call('ZADD', c.key, at, at .. ':' .. num(have - taken)) end
      left, removed = left - taken, removed + taken
    end
  end
  take(log_entries(c, num(since), '+inf'))
  if left > 0 then
    local before = redis.pcall('ZREVRANGEBYSCORE', c.key, '(' .. num(since), '(' .. num(now - c.w), 'WITHSCORES')
    if type(before) == 'table' and not before.err then take(before) end
  end
  if removed > 0 then
    redis.call('SET', c.tkey, num(math.max(st.total - removed, 0)), 'KEEPTTL')
    if ttl >= 0 and redis.call('EXISTS', c.key) == 1 then redis.call('PEXPIRE', c.key, ttl) end
  end
end

-- dispatch -------------------------------------------------------------------------------
local function peek(c, st, now, requests, burst)
  local cost = c.cost
  if c.alg == LOG then return log_peek(c, st, now, c.w, requests, cost) end
  if c.alg == WINDOW then return window_peek(st, now, c.w, requests, cost) end
  if c.alg == FIXED then return fixed_peek(st, now, c.w, requests, cost) end
  if c.alg == BUCKET then return bucket_peek(st, now, c.w, requests, burst, cost) end
  return gcra_peek(st, now, c.w, requests, burst, cost)
end

-- Every key lives exactly as long as its state matters (set with the state: one call, not two).
local function ttl_until(expires, now) return num(math.max(cdiv(expires - now, 1000), 1)) end
local function consume(c, st, now)
  if c.alg == LOG then
    local ttl = ttl_until(log_consume(c, st, now, c.cost), now)
    redis.call('PEXPIRE', c.key, ttl)
    redis.call('PEXPIRE', c.tkey, ttl)
    return
  end
  local state, expires
  if c.alg == WINDOW then state, expires = window_consume(c, st, now, c.cost)
  elseif c.alg == FIXED then state, expires = fixed_consume(c, st, now, c.cost)
  elseif c.alg == BUCKET then state, expires = bucket_consume(c, st, now, c.cost)
  else state, expires = gcra_consume(c, st, now, c.cost) end
  redis.call('SET', c.key, state, 'PX', ttl_until(expires, now))
end

-- Undoes a consumption of `cost` made at `at` (Redis Cluster, when a later part of the same
-- request was denied). Conservative: never gives back more than was taken.
local function refund(c, st, at, now)
  if not st then return end
  local cost = c.cost
  if c.alg == LOG then return log_refund(c, st, at, now, cost) end
  local w = c.w
  if c.alg == FIXED then
    if st.a == at - at % w then redis.call('SET', c.key, 'F ' .. num(st.a) .. ' ' .. num(math.max(st.b - cost, 0)), 'KEEPTTL') end
  elseif c.alg == WINDOW then
    local start = at - at % w
    if st.a == start then
      redis.call('SET', c.key, 'S ' .. num(st.a) .. ' ' .. num(math.max(st.b - cost, 0)) .. ' ' .. num(st.d), 'KEEPTTL')
    elseif st.a == start + w then
      redis.call('SET', c.key, 'S ' .. num(st.a) .. ' ' .. num(st.b) .. ' ' .. num(math.max(st.d - cost, 0)), 'KEEPTTL')
    end
  elseif c.alg == BUCKET then
    redis.call('SET', c.key, 'T ' .. num(math.max(st.a - cost, 0)) .. ' ' .. num(st.b), 'KEEPTTL')
  else
    local t = math.max(st.b or interval(w, c.req) or w, 1)
    redis.call('SET', c.key, 'G ' .. num(math.max(st.a - cost * t, now)) .. ' ' .. num(t), 'KEEPTTL')
  end
end

-- A probe of -1 is none; comparing the text spares a conversion per unused probe.
local function probe(x) if x == '-1' then return -1 end return tonumber(x) end

-- The entry point. Loaded as a Redis function library, `run` is registered as the function and
-- the last line is left out (src/store/redis/function.rs); sent by EVAL, the last line runs it.
local function run(KEYS, ARGV)
  local mode = ARGV[1]
  local now = tonumber(ARGV[2])
  if now == 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local n = tonumber(ARGV[3])
  -- Every key's value in one call (a request's keys share a slot, and one command is cheaper
  -- than one per key); a request without limits has no key, and MGET needs one.
  local values = {}
  if #KEYS > 0 then values = redis.call('MGET', unpack(KEYS)) end
  local checks, out, admitted, k = {}, {0, now}, 1, 1
  for i = 1, n do
    local b = 3 + (i - 1) * 13
    local c = {
      alg = tonumber(ARGV[b + 1]), w = tonumber(ARGV[b + 2]), req = tonumber(ARGV[b + 3]),
      burst = tonumber(ARGV[b + 4]), cost = tonumber(ARGV[b + 5]), enforce = ARGV[b + 6] == '1',
      p1r = probe(ARGV[b + 7]), p1b = probe(ARGV[b + 8]),
      p2r = probe(ARGV[b + 9]), p2b = probe(ARGV[b + 10]), slow = tonumber(ARGV[b + 11]),
      wr = probe(ARGV[b + 12]), wb = probe(ARGV[b + 13]),
      key = KEYS[k], key_at = k,
    }
    k = k + 1
    if c.alg == LOG then c.tkey, c.tkey_at = KEYS[k], k; k = k + 1 end
    local st = read(c, values)
    checks[i] = {c, st}
    if mode == 'refund' then
      refund(c, st, tonumber(ARGV[2]), now)
    else
      local o = peek(c, st, now, c.req, c.burst)
      local o1 = c.p1r >= 0 and peek(c, st, now, c.p1r, c.p1b) or o
      local o2 = c.p2r >= 0 and peek(c, st, now, c.p2r, c.p2b) or o
      local p1, p2 = o1[1], o2[1]
      -- The limit as written is often a probe's rate already (a factor of 1 on the other side).
      local w = o
      if c.wr >= 0 then
        if c.wr == c.p1r and c.wb == c.p1b then w = o1
        elseif c.wr == c.p2r and c.wb == c.p2b then w = o2
        else w = peek(c, st, now, c.wr, c.wb) end
      end
      if o[1] == 0 and c.enforce then admitted = 0 end
      local m = #out
      out[m + 1], out[m + 2], out[m + 3], out[m + 4] = o[1], o[2], o[3], o[4]
      out[m + 5], out[m + 6], out[m + 7] = o[5], p1, p2
      out[m + 8], out[m + 9], out[m + 10] = w[1], w[2], w[3]
    end
  end
  out[1] = admitted
  if mode == 'apply' and admitted == 1 then
    for i = 1, n do consume(checks[i][1], checks[i][2], now) end
  end
  return out
end
return run(KEYS, ARGV)
