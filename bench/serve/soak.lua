-- wrk script of bench/serve/soak.sh: each request posts one body, drawn at
-- random: 90% good pages of 300 sizes, 6% corrupt, 4% over the limits.
-- Each 503 delays the thread's next request by the Retry-After the server
-- sent (times 0.5-1.5, so retries do not come in step), as well-behaved
-- clients back off (wrk keeps one script state per thread, so each 503's
-- wait falls on whichever of the thread's connections sends next). SOAK_RETRY=0 retries
-- at once, wrk's default: a storm of ~6,000 requests a second on 2 cores.
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

local honour = os.getenv("SOAK_RETRY") ~= "0"
local waits = {} -- one per 503 not yet waited out: its Retry-After in ms

function delay()
  return table.remove(waits, 1) or 0
end

function response(status, headers, body)
  if honour and status == 503 then
    local after = tonumber(headers["Retry-After"] or headers["retry-after"] or "1") or 1
    table.insert(waits, math.floor(after * 1000 * (0.5 + math.random())))
  end
end
