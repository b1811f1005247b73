# Scale-out over MPI (issue 21, docs/scale-out.md): `jarvis sweep`,
# `sweep-compare` and `collectives` spread their runs over the ranks of an
# mpirun / srun job. ON by default when an MPI implementation is found
# (Debian: libopenmpi-dev); without it the CLI is the single-process one.
find_package(MPI COMPONENTS CXX QUIET)
set(jarvis_mpi_default OFF)
if(MPI_CXX_FOUND)
  set(jarvis_mpi_default ON)
endif()
option(JARVIS_MPI "Run sweeps and multi-rank sets across MPI ranks (needs MPI)"
  ${jarvis_mpi_default})
if(JARVIS_MPI AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "JARVIS_MPI=ON but no MPI found (install libopenmpi-dev)")
endif()

if(JARVIS_MPI)
  # Above the analyses, below the CLI. The CLI links the MPI-free part (is
  # this process a rank, staged output directories); the job itself is the
  # module libjarvis_mpi.so, loaded by a process that mpirun / srun started as
  # one of several ranks, so that no other process loads Open MPI's libraries
  # (about 1 ms at every start). The module resolves the engine's symbols
  # against the binary (CMakeLists.txt).
  add_library(jarvis_scaleout STATIC ${CMAKE_SOURCE_DIR}/src/scaleout/ranks.cpp
    ${CMAKE_SOURCE_DIR}/src/scaleout/staged_dir.cpp)
  target_link_libraries(jarvis_scaleout PUBLIC jarvis_engine)
  add_library(jarvis_mpi_job OBJECT ${CMAKE_SOURCE_DIR}/src/scaleout/job.cpp
    ${CMAKE_SOURCE_DIR}/src/scaleout/tasks.cpp ${CMAKE_SOURCE_DIR}/src/scaleout/sweep_load.cpp
    ${CMAKE_SOURCE_DIR}/src/scaleout/collectives_load.cpp)
  set_target_properties(jarvis_mpi_job PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(jarvis_mpi_job PUBLIC jarvis_engine MPI::MPI_CXX)
  # The C API only: the deprecated C++ bindings' headers do not build warning-free.
  target_compile_definitions(jarvis_mpi_job PUBLIC OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  add_library(jarvis_mpi MODULE $<TARGET_OBJECTS:jarvis_mpi_job>)
  target_link_libraries(jarvis_mpi PRIVATE MPI::MPI_CXX fmt::fmt)
  set_target_properties(jarvis_mpi PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  target_link_libraries(jarvis PRIVATE jarvis_scaleout)
  target_compile_definitions(jarvis PRIVATE JARVIS_MPI=1)
  add_dependencies(jarvis jarvis_mpi)
  message(STATUS "JARVIS_MPI: on (${MPIEXEC_EXECUTABLE})")
else()
  message(STATUS "JARVIS_MPI: off")
endif()
