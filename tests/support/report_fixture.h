// Loaded conformance traces shared by the tests: each trace is loaded, its
// call tree and core report built once per test run.
#pragma once

#include <string>
#include <utility>

#include "report/report.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::testing {

struct ReportFixture {
  Trace trace;
  CallTree tree;
  Report report;
  explicit ReportFixture(Trace t)
      : trace(std::move(t)), tree(trace), report(build_report(trace, tree, ReportOptions{})) {}
};

// `dir` is a conformance directory holding trace.json.gz.
const ReportFixture& report_fixture(const std::string& dir);

}  // namespace jarvis::testing
