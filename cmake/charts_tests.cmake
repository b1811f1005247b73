# Browser test of the HTML reports: headless Chromium loads every report kind
# from a file:// URL, fails on any console error or failed request, and saves
# screenshots under build/charts_browser/. Fails (never skips) when chromium
# or python3 is missing: CI installs both. Without ../shared it runs on the
# repository's copy (tests/data/shared), without the sweep pages.
find_program(JARVIS_CHROMIUM NAMES chromium chromium-browser google-chrome)
find_package(Python3 COMPONENTS Interpreter)
add_test(NAME charts_browser
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/needs_shared.sh ${CMAKE_SOURCE_DIR}/../shared
          --else ${CMAKE_SOURCE_DIR}/tests/data/shared
          ${CMAKE_SOURCE_DIR}/tests/browser/run_browser_test.sh $<TARGET_FILE:jarvis>
          ${CMAKE_SOURCE_DIR}/../shared ${CMAKE_BINARY_DIR}/charts_browser
          "${JARVIS_CHROMIUM}" "${Python3_EXECUTABLE}")
set_tests_properties(charts_browser PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
