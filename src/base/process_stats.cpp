#include "base/process_stats.h"

#include <sys/resource.h>

namespace jarvis {

namespace {

bool self_usage(rusage& u) {
  return getrusage(RUSAGE_SELF, &u) == 0;
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6;
}

}  // namespace

double process_cpu_s() {
  rusage u{};
  return self_usage(u) ? seconds(u.ru_utime) + seconds(u.ru_stime) : 0;
}

double peak_rss_mb() {
  rusage u{};
  return self_usage(u) ? static_cast<double>(u.ru_maxrss) / 1024.0 : 0;
}

}  // namespace jarvis
