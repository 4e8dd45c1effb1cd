-- Delete nodes. Pods committed to them stay recorded until released.
-- ARGV[2]: msgpack list of node names.
local dirty = {}
for _, name in ipairs(cmsgpack.unpack(ARGV[2])) do
  if is_name(name) then
    redis.call('DEL', NODE .. name)
    dirty[name] = true
  end
end
return bump(dirty)
