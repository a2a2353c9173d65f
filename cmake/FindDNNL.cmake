# FindDNNL.cmake — finds oneDNN (Debian libdnnl-dev) by header and library; defines DNNL_FOUND, DNNL_VERSION
# and Mirror::DNNL. Not oneDNN's own dnnl-config.cmake: that one requires the OpenCL headers (Debian builds
# oneDNN with its OpenCL GPU runtime), which Mirror never uses. Hints: DNNL_ROOT.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ${DNNL_ROOT} $ENV{DNNL_ROOT} PATH_SUFFIXES include)
find_library(DNNL_LIBRARY NAMES dnnl HINTS ${DNNL_ROOT} $ENV{DNNL_ROOT} PATH_SUFFIXES lib lib64)
if(DNNL_INCLUDE_DIR AND EXISTS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _dnnl_v REGEX "^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" DNNL_VERSION "${_dnnl_v}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DNNL REQUIRED_VARS DNNL_LIBRARY DNNL_INCLUDE_DIR VERSION_VAR DNNL_VERSION)
if(DNNL_FOUND AND NOT TARGET Mirror::DNNL)
  add_library(Mirror::DNNL UNKNOWN IMPORTED)
  set_target_properties(Mirror::DNNL PROPERTIES IMPORTED_LOCATION "${DNNL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}")
endif()
mark_as_advanced(DNNL_INCLUDE_DIR DNNL_LIBRARY)
