-- Tables: binary trees built and dropped (binarytrees), and arrays and records grown by
-- insertion (their parts are lua.other). ARGS: depth (default 14).
local depth = tonumber(arg and arg[1]) or 14

local function bottomUpTree(d)
  if d > 0 then
    d = d - 1
    return { bottomUpTree(d), bottomUpTree(d) }
  end
  return {}
end

local function itemCheck(tree)
  if tree[1] then
    return 1 + itemCheck(tree[1]) + itemCheck(tree[2])
  end
  return 1
end

local function fillArray(n)
  local t = {}
  for i = 1, n do
    t[#t + 1] = i
  end
  return t
end

local function records(n)
  local out = {}
  for i = 1, n do
    out[i] = { id = i, name = "r", score = i * 2, tags = { i, i + 1 } }
  end
  return out
end

local total = 0
for d = 4, depth, 2 do
  local iters = 1 << (depth - d + 4)
  for _ = 1, iters do
    total = total + itemCheck(bottomUpTree(d))
  end
end
for _ = 1, 40 do
  total = total + #fillArray(5000) + #records(2000)
end
print("tables", total)
