# The install tree, moved and run from elsewhere, gives the build tree's report
# (tests/install/run_install_test.sh). Needs the generated man page and
# completion, so it depends on the jarvis_docs target having been built (ALL).
add_test(NAME install_tree
  COMMAND ${CMAKE_SOURCE_DIR}/tests/install/run_install_test.sh ${CMAKE_BINARY_DIR}
          ${CMAKE_SOURCE_DIR} $<TARGET_EXISTS:_jarvis>)
set_tests_properties(install_tree PROPERTIES TIMEOUT 300)
