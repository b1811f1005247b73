// The views of src/sql/views/*.sql, embedded by cmake/sql.cmake.
#pragma once

#include <vector>

namespace jarvis::sql {

struct EmbeddedView {
  const char* path;  // file name, e.g. "steps.sql"
  const char* sql;
};
const std::vector<EmbeddedView>& embedded_views();

}  // namespace jarvis::sql
