-- wrk script for the plan server load test (docs/benchmarks.md): every request polls
-- GET /schedule/{job}?rank=R, cycling R over the job's ranks. Set JOB (the job id, '+' as %2B)
-- and RANKS (default 16) in the environment:
--   JOB=... wrk -t2 -c1024 -d30s --latency -s bench/serve_schedule.lua http://127.0.0.1:7787
local job = os.getenv("JOB") or error("set JOB to the job id")
local ranks = tonumber(os.getenv("RANKS") or "16")
local paths = {}
for r = 0, ranks - 1 do
  paths[r + 1] = "/schedule/" .. job .. "?rank=" .. r
end
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", paths[(n % ranks) + 1])
end
