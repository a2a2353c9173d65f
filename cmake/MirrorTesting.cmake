# MirrorTesting.cmake — registers test binaries with CTest.
#   mirror_add_test(NAME SOURCES ... LIBS ... [TIMEOUT s] [SKIPS])   one process, GoogleTest's own main
#   mirror_add_mpi_test(NAME SOURCES ... LIBS ... NP 1 2 3 4 [TIMEOUT s] [GPU])
#       one CTest entry per rank count, run as `mpirun -np N`; the MPI test main prints from rank 0 only
#       and returns an exit code agreed by all ranks. GPU marks a binary whose cases GTEST_SKIP without a
#       GPU (label GPU).
#   SKIPS / GPU: the program runs under gtest_skip_status.sh, so CTest counts it skipped when it passed with
#   skipped cases and failed when any case failed (SKIP_REGULAR_EXPRESSION would call a failure a skip).
execute_process(COMMAND id -u OUTPUT_VARIABLE _mirror_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_mirror_mpiexec_flags --oversubscribe)
if(_mirror_uid STREQUAL "0")
  list(APPEND _mirror_mpiexec_flags --allow-run-as-root)
endif()
set(MIRROR_MPIEXEC_FLAGS "${_mirror_mpiexec_flags}" CACHE STRING "Flags CTest passes to mpirun for MPI tests")

set(MIRROR_GTEST_SKIP_STATUS ${CMAKE_CURRENT_LIST_DIR}/gtest_skip_status.sh)

function(mirror_add_test name)
  cmake_parse_arguments(ARG "SKIPS" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  mirror_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  if(ARG_SKIPS)
    add_test(NAME ${name} COMMAND bash ${MIRROR_GTEST_SKIP_STATUS} $<TARGET_FILE:${name}>)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  else()
    add_test(NAME ${name} COMMAND ${name})
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
endfunction()

function(mirror_add_mpi_test name)
  cmake_parse_arguments(ARG "GPU" "TIMEOUT" "SOURCES;LIBS;NP" ${ARGN})
  if(NOT ARG_NP)
    set(ARG_NP 1 2 3 4)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  mirror_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} mirror::test_mpi_main)
  set(wrapper)
  if(ARG_GPU)
    set(wrapper bash ${MIRROR_GTEST_SKIP_STATUS})
  endif()
  foreach(np IN LISTS ARG_NP)
    add_test(NAME ${name}.np${np}
             COMMAND ${wrapper} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MIRROR_MPIEXEC_FLAGS}
                     $<TARGET_FILE:${name}>)
    # mpirun gives rank 0 a pseudo-terminal: without GTEST_COLOR=no its colour codes hide "[  SKIPPED ]".
    set_tests_properties(${name}.np${np} PROPERTIES TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${np}
                         ENVIRONMENT "GTEST_COLOR=no")
    if(ARG_GPU)
      set_tests_properties(${name}.np${np} PROPERTIES SKIP_RETURN_CODE 77 LABELS GPU)
    endif()
  endforeach()
endfunction()
