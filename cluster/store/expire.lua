-- Give back every reservation whose expiry time has passed.
-- ARGV[3]: now (unix seconds). Returns [seq, reservations released].
local now = tonumber(ARGV[3])
local dirty, released = {}, 0
local flat = redis.call('HGETALL', HOLDS)
for i = 1, #flat, 2 do
  if cmsgpack.unpack(flat[i + 1])[4] <= now and release_hold(flat[i], dirty) then
    released = released + 1
  end
end
local seq = tonumber(redis.call('GET', SEQ) or '0')
if next(dirty) then seq = bump(dirty) end
return {seq, released}
