# jarvis_embed_list(OUT FILES BASE): C++ initialiser rows {"relative/path", R"(content)"}
# for compiling data files (schemas, skills, GPU arch files) into the binary, so
# an installed jarvis needs no data directory next to it.
function(jarvis_embed_list out_var files base)
  set(body "")
  foreach(f IN LISTS files)
    file(READ ${f} content)
    file(RELATIVE_PATH rel ${base} ${f})
    string(FIND "${content}" ")JARVIS_EMBED\"" clash)
    if(NOT clash EQUAL -1)
      message(FATAL_ERROR "${f} contains the embed delimiter")
    endif()
    string(APPEND body "      {\"${rel}\", R\"JARVIS_EMBED(${content})JARVIS_EMBED\"},\n")
  endforeach()
  set(${out_var} "${body}" PARENT_SCOPE)
endfunction()

# jarvis_embed_text(OUT FILE): the file's content as one C++ raw string literal
# (for a single resource such as the replay runner). Also re-runs the configure
# step when the file changes.
function(jarvis_embed_text out_var file)
  file(READ ${file} content)
  string(FIND "${content}" ")JARVIS_EMBED\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the embed delimiter")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  set(${out_var} "R\"JARVIS_EMBED(${content})JARVIS_EMBED\"" PARENT_SCOPE)
endfunction()
