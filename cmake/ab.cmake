# jarvis ab / jarvis calibrate: the Python shim (src/ab/shim/*.py: the step
# timer, its sitecustomize.py and calibrate's CPU workload) is compiled into
# the engine, as the replay runner is (cmake/replay.cmake): every install
# (cmake --install, the .deb, pip's wheel) carries it inside the binary, which
# writes it next to the run's outputs and puts that folder on PYTHONPATH
# (docs/ab.md). The files stay real Python files that tests run directly.
include(${CMAKE_SOURCE_DIR}/cmake/embed.cmake)
jarvis_embed_folder(TARGET jarvis_engine DIR ${CMAKE_SOURCE_DIR}/src/ab/shim GLOB *.py
  HEADER ab/shim.h NAMESPACE jarvis::ab TYPE ShimFile FUNCTION shim_files
  OUTPUT ${CMAKE_BINARY_DIR}/generated/ab_shim_embedded.cpp)
