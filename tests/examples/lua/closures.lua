-- Closures and coroutines: counters capturing upvalues, a generator through coroutine.wrap,
-- a producer and consumer through coroutine.resume, each allocating in its own function.
-- ARGS: rounds (default 40).
local rounds = tonumber(arg and arg[1]) or 40

local function makeCounters(n)
  local fs = {}
  for i = 1, n do
    local c = i
    fs[i] = function() c = c + 1; return c end
  end
  return fs
end

local function generator(n)
  return coroutine.wrap(function()
    for i = 1, n do
      coroutine.yield({ i, i * i })
    end
  end)
end

local function producer(n)
  return coroutine.create(function()
    for i = 1, n do
      coroutine.yield(string.rep("p", 40 + i % 20))
    end
  end)
end

local function consume(co)
  local len = 0
  while true do
    local ok, v = coroutine.resume(co)
    if not ok or v == nil then break end
    len = len + #v
  end
  return len
end

local total = 0
for _ = 1, rounds do
  local fs = makeCounters(3000)
  for i = 1, #fs, 7 do total = total + fs[i]() end
  for pair in generator(3000) do total = total + pair[2] % 7 end
  total = total + consume(producer(3000))
  local threads = {}
  for i = 1, 200 do threads[i] = coroutine.create(function() return i end) end
  for i = 1, 200 do total = total + select(2, coroutine.resume(threads[i])) end
end
print("closures", total)
