# Real-trace matrix (issue 60 point 2): every trace of ../shared (Kineto,
# rocprofv3, XPlane, nsys SQLite: conformance, A/B and hardware pairs, JAX,
# legacy, NCCL, the sweeps' runs) through every CLI command that reads a trace
# (compare on the pairs) and, in one `jarvis serve --stdio`, every MCP tool that
# takes one. Fails on a signal, a hang (120 s a command or call), an exit other
# than 0/1/2, an exit 1 whose message names no input file, a temp file left by an
# interrupted write, a JSON-RPC internal error (-32603) or a dead server
# (tests/matrix/run_matrix.py; by hand: `--quick`, `--traces REGEX`,
# `--commands REGEX`, `--no-mcp`, `--keep`). Outputs go to a temp dir; about
# 3 minutes on 2 cores. Without ../shared (a fresh clone) it runs on the
# repository's copy of part of it, tests/data/shared (about 1 minute).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(_jarvis_matrix_cmd ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/matrix/run_matrix.py)
else()
  set(_jarvis_matrix_cmd ${CMAKE_SOURCE_DIR}/tests/matrix/run_matrix.py)
endif()
add_test(NAME real_trace_matrix
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/needs_shared.sh ${CMAKE_SOURCE_DIR}/../shared
          --else ${CMAKE_SOURCE_DIR}/tests/data/shared ${_jarvis_matrix_cmd} $<TARGET_FILE:jarvis> ${CMAKE_SOURCE_DIR}/../shared --jobs 2)
set_tests_properties(real_trace_matrix PROPERTIES TIMEOUT 1800 PROCESSORS 2 SKIP_RETURN_CODE 77)
