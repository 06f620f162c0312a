# pilot_warnings: the warning flags for pilot's own targets only (linked PRIVATE), so that
# third-party headers and consumers are not affected. -Werror only when PILOT_WERROR is on.
add_library(pilot_warnings INTERFACE)
target_compile_options(pilot_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wformat=2 -Wimplicit-fallthrough)
if(PILOT_WERROR)
  target_compile_options(pilot_warnings INTERFACE -Werror)
endif()
