# Build time (CI compiles ~400 sources twice on 2 cores, eight to a unit: a GCC
# release build and a clang sanitizer build).
#
# Precompiled headers for clang builds: parsing the standard library, fmt and
# nlohmann/json is 1-1.5 s of a unit's 3-15 s there (measured on
# critical_path/profiler_overhead.cpp and report/perf_tables.cpp under ASan).
# Not for GCC: GCC 12 gains ~0.5 s a unit from them and, with the headers
# precompiled, reports -Warray-bounds false positives inside std::string at
# -O3 (a known GCC 12 false positive), which -Werror turns into a failed build.
# Each target gets its own header because their compile definitions differ;
# doctest's main defines its configuration before including doctest and so
# skips the test PCH.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(JARVIS_PCH_COMMON
    <algorithm> <cmath> <cstdint> <filesystem> <fstream> <functional> <map> <memory>
    <optional> <set> <sstream> <string> <string_view> <unordered_map> <utility> <vector>
    <fmt/format.h> <nlohmann/json.hpp>)
  target_precompile_headers(jarvis_engine PRIVATE ${JARVIS_PCH_COMMON})
  if(MCP_SOURCES)
    target_precompile_headers(jarvis_mcp PRIVATE ${JARVIS_PCH_COMMON})
  endif()
  target_precompile_headers(jarvis PRIVATE ${JARVIS_PCH_COMMON})
  if(BUILD_TESTING)
    target_precompile_headers(jarvis_tests PRIVATE ${JARVIS_PCH_COMMON} <doctest/doctest.h>)
    set_source_files_properties(${CMAKE_SOURCE_DIR}/tests/support/main.cpp PROPERTIES
      SKIP_PRECOMPILE_HEADERS ON)
  endif()
endif()

# The tests' own code is not what they time or stress (the engine is, built
# at the project's level): -O1 compiles a test unit ~20 % faster than -O3.
if(BUILD_TESTING)
  target_compile_options(jarvis_tests PRIVATE $<$<CONFIG:Release>:-O1>)
endif()
