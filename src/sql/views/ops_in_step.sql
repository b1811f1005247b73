-- ops_in_step: every op that starts inside a host ProfilerStep#N range on
-- the step's thread, with the step number first.
CREATE VIEW ops_in_step AS
SELECT s.step AS step, o.*
FROM steps AS s
JOIN ops AS o ON o.pid IS s.pid AND o.tid IS s.tid AND o.ts >= s.ts AND o.ts < s.end;
