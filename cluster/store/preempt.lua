-- Preemption, atomically: evict the victims and reserve the room they free for
-- the preemptor's pods, or change nothing.
-- ARGV[3]: msgpack [victims, reservations]
--   victims:      pod keys of committed pods to release
--   reservations: list of [pod key, node, resource names, amounts, expires at
--                 (unix s)]; names starting with '~' are reserved but never checked
-- Every reservation must fit its node once the victims are gone (counting the
-- reservations before it, and giving back one the same pod held already); a
-- victim no longer committed is a conflict: the plan was made on a stale view.
-- Returns msgpack [seq, status, detail, conflict kind]: status 'reserved', 'conflict' or
-- 'invalid', the kind ('' but for a conflict) as cluster/messages.py's Conflict names it.
local req = cmsgpack.unpack(ARGV[3])
local victims, holds = req[1], req[2]
if type(victims) ~= 'table' or type(holds) ~= 'table' then
  return redis.error_reply('preempt: expected [victims, reservations]')
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
local function answer(status, detail, kind) return cmsgpack.pack({seq, status, detail, kind or ''}) end

-- What each touched node will have free: allocatable minus usage, plus what the
-- victims and the preemptors' earlier reservations give back.
local free = {} -- node -> resource -> amount, or false if the node is gone
local function node_free(name)
  if free[name] ~= nil then return free[name] end
  local flat = redis.call('HGETALL', NODE .. name)
  if #flat == 0 then
    free[name] = false
    return false
  end
  local f = {}
  for i = 1, #flat, 2 do
    local kind, r = string.sub(flat[i], 1, 2), string.sub(flat[i], 3)
    if kind == 'a:' then
      f[r] = (f[r] or 0) + tonumber(flat[i + 1])
    elseif kind == 'u:' then
      f[r] = (f[r] or 0) - tonumber(flat[i + 1])
    end
  end
  free[name] = f
  return f
end
local function give(name, names, amounts, sign)
  local f = node_free(name)
  if f then
    for i, r in ipairs(names) do f[r] = (f[r] or 0) + sign * amounts[i] end
  end
end

local evicted = {}
for _, pod in ipairs(victims) do
  local rec = is_name(pod) and not evicted[pod] and redis.call('HGET', PODS, pod)
  if not rec then
    return answer('conflict', 'victim ' .. tostring(pod) .. ' is no longer committed', 'victim-gone')
  end
  evicted[pod] = true
  local r = cmsgpack.unpack(rec)
  give(r[1], r[3], r[4], 1)
end
for _, h in ipairs(holds) do
  local ok = type(h) == 'table' and is_name(h[1]) and is_name(h[2]) and type(h[3]) == 'table'
    and type(h[4]) == 'table' and #h[3] == #h[4] and type(h[5]) == 'number'
  for i = 1, ok and #h[3] or 0 do ok = ok and is_name(h[3][i]) and is_amount(h[4][i]) end
  if not ok then return answer('invalid', 'malformed reservation') end
  local old = redis.call('HGET', HOLDS, h[1])
  if old then
    local o = cmsgpack.unpack(old)
    give(o[1], o[2], o[3], 1)
  end
  local f = node_free(h[2])
  if not f then return answer('conflict', 'node ' .. h[2] .. ' does not exist', 'node-gone') end
  for i, r in ipairs(h[3]) do
    if string.sub(r, 1, 1) ~= '~' and h[4][i] > 0 and (f[r] or 0) < h[4][i] then
      return answer('conflict', string.format('node %s: insufficient %s for %s (free %s, requested %s)',
        h[2], r, h[1], int(f[r] or 0), int(h[4][i])), 'resources')
    end
  end
  give(h[2], h[3], h[4], -1)
end

-- The plan holds: apply it.
local dirty = {}
for _, pod in ipairs(victims) do release_pod(pod, dirty) end
for _, h in ipairs(holds) do
  release_hold(h[1], dirty)
  local key = NODE .. h[2]
  for i, r in ipairs(h[3]) do redis.call('HINCRBY', key, 'u:' .. r, int(h[4][i])) end
  redis.call('HSET', HOLDS, h[1], cmsgpack.pack({h[2], h[3], h[4], h[5]}))
  dirty[h[2]] = true
end
if next(dirty) then seq = bump(dirty) end
return answer('reserved', '')
