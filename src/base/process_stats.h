// What this process has used so far, from getrusage(RUSAGE_SELF): the CLI's
// per-phase CPU (--progress plain) and the peak memory a sweep's ranks report.
#pragma once

namespace jarvis {

// User + system CPU seconds of the whole process, every thread included (0
// when getrusage fails).
double process_cpu_s();

// Peak resident set of the process, in MB (ru_maxrss, KiB on Linux; 0 when
// getrusage fails).
double peak_rss_mb();

}  // namespace jarvis
