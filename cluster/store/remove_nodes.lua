-- Delete nodes. Pods committed to them stay recorded until released.
-- ARGV[3]: msgpack list of node names.
local dirty = {}
for _, name in ipairs(cmsgpack.unpack(ARGV[3])) do
  if is_name(name) then
    redis.call('DEL', NODE .. name)
    dirty[name] = true
  end
end
return bump(dirty)
