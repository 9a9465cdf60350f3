# Helpers of the stub generators (gen_cudart_stubs.cmake, gen_library_stubs.cmake), included
# in script mode.

# Appends to `out_var` the functions (T/W/i symbols) that `lib` exports whose names match
# `pattern` (`nm -D --defined-only`; a version suffix "@..." is dropped). `script` names the
# caller in errors.
function(stub_exported_names nm lib pattern script out_var)
  execute_process(COMMAND ${nm} -D --defined-only ${lib}
    OUTPUT_VARIABLE listing RESULT_VARIABLE status ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${script}: `${nm} -D --defined-only ${lib}` failed: ${errors}")
  endif()
  set(names ${${out_var}})
  string(REPLACE "\n" ";" lines "${listing}")
  foreach(line ${lines})
    if(line MATCHES "^[0-9a-fA-F]+ [TWi] (${pattern})(@.*)?$")
      list(APPEND names "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# Writes `text` to `out` only when it changed, so the library is not rebuilt for nothing.
function(stub_write_if_changed out text)
  set(old "")
  if(EXISTS "${out}")
    file(READ "${out}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${out}" "${text}")
  endif()
endfunction()
