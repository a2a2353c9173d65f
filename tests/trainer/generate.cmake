# tests/trainer/generate.cmake — text generation (included from tests/trainer/CMakeLists.txt): the sampling
# rules against references computed in the test, and mirror-generate run end to end on checkpoints the test
# writes (its path given by the build).
mirror_add_test(test_sampling SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sampling.cc LIBS mirror::train)
mirror_add_test(test_generate_tool SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_generate_tool.cc LIBS mirror::train
                TIMEOUT 120)
target_compile_definitions(test_generate_tool PRIVATE MIRROR_GENERATE="$<TARGET_FILE:mirror-generate>")
add_dependencies(test_generate_tool mirror-generate)
