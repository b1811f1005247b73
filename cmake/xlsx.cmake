# The Excel workbook writer is a module, libjarvis_xlsx.so (src/report/xlsx/),
# that write_xlsx (src/report/xlsx.cpp) loads on first use: libxlsxwriter
# brings minizip and libcrypto, and loading those at every start cost every
# command that writes no workbook (info, prepare, compare, a snapshot load)
# about 1.6 ms. The engine decides the sheets' contents; the module only
# writes them, and uses nothing of the binary, so the test binary loads it
# from beside itself as well.
add_library(jarvis_xlsx MODULE ${CMAKE_SOURCE_DIR}/src/report/xlsx/lxw_workbook.cpp)
target_include_directories(jarvis_xlsx PRIVATE ${CMAKE_SOURCE_DIR}/src)
# minizip's header only: the module passes libxlsxwriter's zip calls on to the
# minizip libxlsxwriter links (src/report/xlsx/lxw_workbook.cpp, the deflate level).
pkg_check_modules(MINIZIP REQUIRED minizip)
target_include_directories(jarvis_xlsx PRIVATE ${MINIZIP_INCLUDE_DIRS})
target_link_libraries(jarvis_xlsx PRIVATE PkgConfig::XLSXWRITER fmt::fmt ${CMAKE_DL_LIBS})
set_target_properties(jarvis_xlsx PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
