# libedgelm.so: the objects of libedgelm.a linked as a shared library (what `pip install ./python`
# loads through ctypes; docs/python.md). It exports the functions the public headers declare and
# nothing else: a linker version script listing them is written from include/edgelm/*.h at
# configure time, so a header stays the one place that makes a function public (the internal
# elm_* functions of src/ keep local binding). A declaration is a line that starts with its
# return type and names an elm_* or edgelm_* function; comment lines and static inline helpers
# are not. tests/cli_shared_lib.sh checks the result with nm -D.
file(GLOB EDGELM_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/edgelm/*.h)
set(EDGELM_EXPORTS "")
foreach(header ${EDGELM_PUBLIC_HEADERS})
  file(STRINGS ${header} decls REGEX "^[A-Za-z_][A-Za-z0-9_ ]*[ *](elm|edgelm)_[a-z0-9_]+\\(")
  foreach(decl ${decls})
    if(decl MATCHES "^(static|typedef|#)")
      continue()
    endif()
    string(REGEX MATCH "(elm|edgelm)_[a-z0-9_]+\\(" name "${decl}")
    string(REPLACE "(" ";" name "${name}")
    string(APPEND EDGELM_EXPORTS "    ${name}\n")
  endforeach()
endforeach()
set(EDGELM_VERSION_SCRIPT ${PROJECT_BINARY_DIR}/edgelm.map)
file(WRITE ${EDGELM_VERSION_SCRIPT} "{\n  global:\n${EDGELM_EXPORTS}  local: *;\n};\n")

add_library(edgelm_shared SHARED)
target_link_libraries(edgelm_shared PUBLIC edgelm_objects)
# soname libedgelm.so.MAJOR.MINOR: before 1.0 a minor release may change the ABI.
set_target_properties(edgelm_shared PROPERTIES OUTPUT_NAME edgelm VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR} LINK_DEPENDS ${EDGELM_VERSION_SCRIPT})
target_link_options(edgelm_shared PRIVATE -Wl,--version-script=${EDGELM_VERSION_SCRIPT})
