-- steps: one row per host ProfilerStep#N range (per-step grouping).
CREATE VIEW steps AS
SELECT step, uid, name, ts, dur, end, pid, tid
FROM annotations
WHERE step IS NOT NULL AND on_gpu = 0;
