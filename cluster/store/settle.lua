-- The second step of a commit that spans partitions (partitioned.py): the part of a
-- unit reserved here (commit.lua with a reservation) is confirmed or given back.
-- ARGV[3]: unit key; ARGV[4]: 'confirm' | 'abort' | 'resolve';
-- ARGV[5]: the unit's decision key when this is its home partition, else '';
-- ARGV[6]: seconds the decision is kept (longer than any reservation lives).
-- confirm: the reservation is a commit from now on: 'confirmed'; at home the
--   decision 'committed' is written with it, in the same step. 'committed' if it
--   was confirmed already (by a sweeper), 'gone' if it was given back.
-- abort: the reservation is given back: 'released' ('committed' if confirmed
--   already: left as it is; 'gone' if there is none). At home, 'aborted' is decided.
-- resolve (at home, asked by a sweeper that holds an expired part elsewhere):
--   'committed' if home decided so; else the unit is aborted at home: 'aborted'.
-- Returns [seq, answer].
local unit, action, decided, keep = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
if not is_name(unit) or not (keep and keep > 0) then
  return redis.error_reply('settle: expected a unit key and a positive keep time')
end
local dirty = {}
local reserved = redis.call('HEXISTS', RESERVED, unit) == 1
local committed = not reserved and redis.call('HEXISTS', UNITS, unit) == 1

local function give_back()
  local blob = redis.call('HGET', UNITS, unit)
  if blob then
    for _, pod in ipairs(cmsgpack.unpack(blob)) do release_pod(pod, dirty) end
    redis.call('HDEL', UNITS, unit)
  end
  redis.call('HDEL', RESERVED, unit)
end

local function decide(decision)
  if decided ~= '' then redis.call('SET', decided, decision, 'EX', keep) end
end

local answer
if action == 'confirm' then
  if reserved then
    redis.call('HDEL', RESERVED, unit)
    decide('committed')
    answer = 'confirmed'
  else
    answer = committed and 'committed' or 'gone'
  end
elseif action == 'abort' then
  if reserved then give_back() end
  if not committed then decide('aborted') end
  answer = reserved and 'released' or (committed and 'committed' or 'gone')
elseif action == 'resolve' then
  if decided == '' then return redis.error_reply('settle: resolve is asked at home') end
  if redis.call('GET', decided) == 'committed' then
    answer = 'committed'
  else
    if reserved then give_back() end
    decide('aborted')
    answer = 'aborted'
  end
else
  return redis.error_reply('settle: action must be confirm, abort or resolve')
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then seq = bump(dirty) end
return {seq, answer}
