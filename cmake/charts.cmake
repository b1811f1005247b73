# Charts and HTML reports (src/charts): cmark renders the findings markdown;
# the browser test is in cmake/charts_tests.cmake.
pkg_check_modules(CMARK REQUIRED IMPORTED_TARGET libcmark)
target_link_libraries(jarvis_engine PUBLIC PkgConfig::CMARK)

