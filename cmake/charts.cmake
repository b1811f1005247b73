# Charts and HTML reports (src/charts): cmark-gfm (CommonMark + GitHub tables)
# renders the findings markdown;
# the browser test is in cmake/charts_tests.cmake.
pkg_check_modules(CMARK_GFM REQUIRED IMPORTED_TARGET libcmark-gfm)
target_link_libraries(jarvis_engine PUBLIC PkgConfig::CMARK_GFM)

