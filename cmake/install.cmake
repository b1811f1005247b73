# `cmake --install build --prefix P` gives a self-contained tree: the binary
# (arch files, tool schemas, skills and the replay runner compiled in), the
# skills as readable files, the man page and shell completions generated from
# the binary's own CLI, the docs. The tree is relocatable: nothing in it
# refers to the prefix or to the source tree. CPack turns it into a .deb.
install(TARGETS jarvis RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The modules (HTTP transport, zip and xlsx writers, markdown renderer, MPI job): the binary
# looks for them in ../lib/jarvis beside itself (src/base/module_loader.cpp),
# whatever the platform's library directory.
install(TARGETS jarvis_http jarvis_zip jarvis_xlsx jarvis_markdown LIBRARY DESTINATION lib/jarvis)
if(TARGET jarvis_mpi)
  install(TARGETS jarvis_mpi LIBRARY DESTINATION lib/jarvis)
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/skills/ DESTINATION ${CMAKE_INSTALL_DATADIR}/jarvis/skills)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/arch/ DESTINATION ${CMAKE_INSTALL_DATADIR}/jarvis/arch)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/CONTRIBUTING.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# What the README and docs link to, at the same relative paths, so every link
# in the installed docs resolves and the README's example trace can be run
# from an install (tests/install/check_doc_links.py).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
  USE_SOURCE_PERMISSIONS)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/skills/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/skills)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/tools_schema/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/tools_schema)
install(FILES ${CMAKE_SOURCE_DIR}/bench/RESULTS.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/bench)

set(JARVIS_GENERATED_DOCS ${CMAKE_BINARY_DIR}/generated/jarvis.1
  ${CMAKE_BINARY_DIR}/generated/jarvis.bash)
add_custom_command(OUTPUT ${JARVIS_GENERATED_DOCS}
  COMMAND $<TARGET_FILE:jarvis> manpage > ${CMAKE_BINARY_DIR}/generated/jarvis.1
  COMMAND $<TARGET_FILE:jarvis> completion bash > ${CMAKE_BINARY_DIR}/generated/jarvis.bash
  DEPENDS jarvis
  COMMENT "man page and bash completion from the jarvis CLI")
add_custom_target(jarvis_docs ALL DEPENDS ${JARVIS_GENERATED_DOCS})
install(FILES ${CMAKE_BINARY_DIR}/generated/jarvis.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_BINARY_DIR}/generated/jarvis.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME jarvis)

set(CPACK_PACKAGE_NAME jarvis)
set(CPACK_PACKAGE_VENDOR "jarvis")
set(CPACK_PACKAGE_CONTACT "jarvis maintainers <jarvis@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "GPU performance analysis of PyTorch profiler traces (TraceLens-compatible, MCP server)")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# dpkg-shlibdeps turns the linked shared libraries (fmt, simdjson, re2,
# cmark-gfm, ..., and the modules' cpp-httplib, libzip and xlsxwriter) into
# the package's Depends.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The Python module (when built) imports pandas at run time.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-pandas")
include(CPack)
