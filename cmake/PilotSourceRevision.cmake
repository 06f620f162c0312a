# PILOT_SOURCE_REVISION: `git describe` of the source tree at configure time, or "unknown"
# outside a git checkout (a tarball). Recorded in every run.json.
set(PILOT_SOURCE_REVISION "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --abbrev=12
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    OUTPUT_VARIABLE _rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _rev)
    set(PILOT_SOURCE_REVISION "${_rev}")
  endif()
endif()
