-- kernels_in_step: every GPU event whose launch call starts inside a host
-- ProfilerStep#N range (GPU work is attributed to the step that launched
-- it, even when it runs after the step's host range ends).
CREATE VIEW kernels_in_step AS
SELECT s.step AS step, k.*
FROM steps AS s
JOIN kernels AS k ON k.launch_ts >= s.ts AND k.launch_ts < s.end;
