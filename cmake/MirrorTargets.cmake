# MirrorTargets.cmake — per-target defaults every Mirror target gets: C++20, warnings, sanitizers.
function(mirror_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  if(MIRROR_SANITIZE)
    list(JOIN MIRROR_SANITIZE "," _san)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${_san} -fno-omit-frame-pointer>)
    # PUBLIC: a program (or an installed consumer) linking a sanitized static library needs the runtime too.
    target_link_options(${target} PUBLIC -fsanitize=${_san})
  endif()
endfunction()
