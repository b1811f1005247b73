# The build options `jarvis --version` names (src/cli/main.cpp), read after
# every option has been decided (the Python module's in python/).
set(jarvis_build_options "MPI ${JARVIS_MPI}, Python ${JARVIS_PYTHON}, xlsx ON")
if(JARVIS_SANITIZE)
  string(APPEND jarvis_build_options ", sanitizers ON")
endif()
string(REPLACE "ON" "on" jarvis_build_options "${jarvis_build_options}")
string(REPLACE "OFF" "off" jarvis_build_options "${jarvis_build_options}")
set_property(SOURCE src/cli/main.cpp APPEND PROPERTY COMPILE_DEFINITIONS
  JARVIS_BUILD_OPTIONS="${jarvis_build_options}")
