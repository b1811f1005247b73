# The SQL layer's views (src/sql/views/*.sql) compiled into the engine: each
# file is run on every query connection before the caller's statement.
include(${CMAKE_SOURCE_DIR}/cmake/embed.cmake)
jarvis_embed_folder(TARGET jarvis_engine DIR ${CMAKE_SOURCE_DIR}/src/sql/views GLOB *.sql
  HEADER sql/views.h NAMESPACE jarvis::sql TYPE EmbeddedView FUNCTION embedded_views
  OUTPUT ${CMAKE_BINARY_DIR}/generated/sql_views_embedded.cpp)
# SQLite itself (PkgConfig::SQLITE3) is found and linked in CMakeLists.txt:
# the Nsight Systems reader needs it too.
