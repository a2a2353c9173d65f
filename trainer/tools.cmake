# trainer/tools.cmake — what the data-parallel part of mirror::train needs (collectives, data, HDF5 checkpoints,
# JSON, CLI11) and the programs in tools/. Included from trainer/CMakeLists.txt.
target_link_libraries(mirror_train
  PUBLIC mirror::collectives mirror::data
  PRIVATE HDF5::HDF5 ZLIB::ZLIB nlohmann_json::nlohmann_json CLI11::CLI11)
add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/tools ${CMAKE_CURRENT_BINARY_DIR}/tools)
