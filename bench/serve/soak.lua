-- wrk script of bench/serve/soak.sh: each request posts one body, drawn at
-- random: 90% good pages of 300 sizes, 6% corrupt, 4% over the limits.
local dir = os.getenv("SOAK_DIR")
local bodies = {good = {}, corrupt = {}, huge = {}}

local function load(kind)
  local p = io.popen('ls "' .. dir .. '/' .. kind .. '"')
  for name in p:lines() do
    local f = assert(io.open(dir .. "/" .. kind .. "/" .. name, "rb"))
    table.insert(bodies[kind], f:read("*a"))
    f:close()
  end
  p:close()
end

function init(args)
  load("good"); load("corrupt"); load("huge")
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
end

function request()
  local r, set = math.random(), bodies.good
  if r > 0.96 then set = bodies.huge elseif r > 0.90 then set = bodies.corrupt end
  local body = set[math.random(#set)]
  return wrk.format("POST", "/v1/ocr", {["Content-Type"] = "application/octet-stream"}, body)
end
