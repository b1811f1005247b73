# The MPI tests (tests/scaleout/test_scaleout.cpp) start `mpirun -np 3 jarvis ...`;
# they are skipped in the `unit` run and run here when mpirun is present.
if(JARVIS_MPI AND MPIEXEC_EXECUTABLE)
  target_compile_definitions(jarvis_tests PRIVATE JARVIS_MPIEXEC="${MPIEXEC_EXECUTABLE}")
  add_test(NAME scaleout_mpi COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/needs_shared.sh ${CMAKE_SOURCE_DIR}/../shared
           --needs "the sweep runs of sweeps/" $<TARGET_FILE:jarvis_tests>
           -ts=scaleout --no-skip)
  set_tests_properties(scaleout_mpi PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
# `jarvis --version` names the MPI option (tests/cli/test_cli.cpp).
if(JARVIS_MPI)
  target_compile_definitions(jarvis_tests PRIVATE JARVIS_MPI_BUILD=1)
else()
  target_compile_definitions(jarvis_tests PRIVATE JARVIS_MPI_BUILD=0)
endif()
