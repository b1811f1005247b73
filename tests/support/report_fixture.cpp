#include "report_fixture.h"

#include <map>
#include <memory>
#include <mutex>

#include "trace/loader.h"

namespace jarvis::testing {

namespace {

std::unique_ptr<ReportFixture> build(const std::string& dir) {
  return std::make_unique<ReportFixture>(load_trace(dir + "/trace.json.gz"));
}

}  // namespace

const ReportFixture& report_fixture(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ReportFixture>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[dir];
  if (!slot) slot = build(dir);
  return *slot;
}

}  // namespace jarvis::testing
