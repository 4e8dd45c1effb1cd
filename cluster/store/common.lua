-- Shared by every node-store script (prepended when the script is loaded).
-- KEYS: seq, changes, pods, units.  ARGV[1]: the node key prefix.
local SEQ, CHANGES, PODS, UNITS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local NODE = ARGV[1]
local MAX_AMOUNT = 9007199254740992 -- 2^53: beyond it a Lua number is not exact

-- Integers are written as plain digits: tostring() would write 1e+15.
local function int(x)
  return string.format('%.0f', x)
end

local function is_amount(x)
  return type(x) == 'number' and x >= 0 and x <= MAX_AMOUNT and x == math.floor(x)
end

local function is_name(x)
  return type(x) == 'string' and #x > 0 and #x <= 512
end

-- Record that the given nodes changed at a new global version.
local function bump(dirty)
  local seq = redis.call('INCR', SEQ)
  for name, _ in pairs(dirty) do
    if redis.call('EXISTS', NODE .. name) == 1 then
      redis.call('HSET', NODE .. name, 'v', seq)
    end
    redis.call('ZADD', CHANGES, seq, name)
  end
  return seq
end
