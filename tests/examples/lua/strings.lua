-- Strings: concatenation in a loop, string.rep, string.format and table.concat, each from
-- its own function. ARGS: rounds (default 60).
local rounds = tonumber(arg and arg[1]) or 60

local function concatLoop(n)
  local s = ""
  for i = 1, n do
    s = s .. "x"
  end
  return #s
end

local function repeated(n)
  local len = 0
  for i = 1, n do
    len = len + #string.rep("ab", 100 + i % 50)
  end
  return len
end

local function formatted(n)
  local len = 0
  for i = 1, n do
    len = len + #string.format("item %d of %d: %s", i, n, tostring(i * 3.5))
  end
  return len
end

local function joined(n)
  local parts = {}
  for i = 1, n do
    parts[i] = tostring(i)
  end
  return #table.concat(parts, ",")
end

local total = 0
for _ = 1, rounds do
  total = total + concatLoop(1500) + repeated(800) + formatted(3000) + joined(3000)
end
print("strings", total)
