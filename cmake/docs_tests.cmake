# The documentation's runnable blocks (README.md, docs/*.md: those marked
# <!-- doc-test -->) run as written against the built jarvis
# (tests/docs/run_doc_blocks.py, Python standard library only).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME doc_examples
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/docs/run_doc_blocks.py
            --jarvis $<TARGET_FILE:jarvis> --source ${CMAKE_SOURCE_DIR})
  set_tests_properties(doc_examples PROPERTIES TIMEOUT 600)
endif()
