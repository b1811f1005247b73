# Charts and HTML reports (src/charts). cmark-gfm (CommonMark + GitHub
# tables) renders the findings markdown from a module, libjarvis_markdown.so
# (src/charts/markdown/), that render_findings_page loads on first use:
# loading cmark-gfm and its extensions library at every start cost every
# command that renders no findings (a snapshot load of a small trace
# included) 0.1-0.3 ms. The module uses nothing of the binary, so the test
# binary loads it from beside itself as well.
# The browser test is in cmake/charts_tests.cmake.
pkg_check_modules(CMARK_GFM REQUIRED IMPORTED_TARGET libcmark-gfm)
add_library(jarvis_markdown MODULE ${CMAKE_SOURCE_DIR}/src/charts/markdown/cmark_renderer.cpp)
target_include_directories(jarvis_markdown PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(jarvis_markdown PRIVATE PkgConfig::CMARK_GFM)
set_target_properties(jarvis_markdown PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
