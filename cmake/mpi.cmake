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
  # Above the analyses, below the CLI: only the CLI links it.
  file(GLOB SCALEOUT_SOURCES CONFIGURE_DEPENDS src/scaleout/*.cpp)
  add_library(jarvis_scaleout STATIC ${SCALEOUT_SOURCES})
  target_link_libraries(jarvis_scaleout PUBLIC jarvis_engine MPI::MPI_CXX)
  # The C API only: the deprecated C++ bindings' headers do not build warning-free.
  target_compile_definitions(jarvis_scaleout PUBLIC OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  target_link_libraries(jarvis PRIVATE jarvis_scaleout)
  target_compile_definitions(jarvis PRIVATE JARVIS_MPI=1)
  message(STATUS "JARVIS_MPI: on (${MPIEXEC_EXECUTABLE})")
else()
  message(STATUS "JARVIS_MPI: off")
endif()
