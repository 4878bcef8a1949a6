# Helpers that give every layer the same shape: one library per folder
# (every *.cc that is not a test), and one test binary per folder
# (every *_test.cc), registered with ctest under the given labels.
#
# Files are globbed with CONFIGURE_DEPENDS so that adding a file to a layer
# needs no CMake edit; a layer's dependencies are declared here explicitly.
# EXCLUDE names files of the folder that another library of it builds (e.g.
# model/'s torch-free pw_model_spec).

function(pw_add_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS;EXCLUDE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_test\\.cc$")
  foreach(file IN LISTS ARG_EXCLUDE)
    list(REMOVE_ITEM srcs ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  endforeach()
  add_library(pw_${name} STATIC ${srcs})
  target_include_directories(pw_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(pw_${name} PUBLIC ${ARG_DEPS})
endfunction()

function(pw_add_layer_tests name)
  cmake_parse_arguments(ARG "" "" "DEPS;LABELS" ${ARGN})
  if(NOT PW_BUILD_TESTS)
    return()
  endif()
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(NOT tests)
    return()
  endif()
  add_executable(pw_${name}_test ${tests})
  target_link_libraries(pw_${name}_test PRIVATE pw_${name} ${ARG_DEPS} GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  gtest_discover_tests(pw_${name}_test
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    DISCOVERY_TIMEOUT 60)
  # gtest_discover_tests (CMake 3.25) flattens a LABELS list given through
  # PROPERTIES, so label the discovered tests from a file that ctest reads
  # after their include file (it sees the list pw_<name>_test_TESTS).
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/pw_${name}_test_labels.cmake)
  file(WRITE ${labels_file}
    "foreach(t IN LISTS pw_${name}_test_TESTS)\n"
    "  set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${ARG_LABELS}\")\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
endfunction()

# A layer that uses LibTorch: as pw_add_layer, plus Torch's include paths,
# libraries and flags, and USE_C10D_GLOO (Debian's c10d headers hide
# ProcessGroupGloo without it).
function(pw_add_torch_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS;EXCLUDE" ${ARGN})
  pw_add_layer(${name} DEPS ${ARG_DEPS} ${TORCH_LIBRARIES} EXCLUDE ${ARG_EXCLUDE})
  target_compile_definitions(pw_${name} PUBLIC USE_C10D_GLOO)
  target_compile_options(pw_${name} PUBLIC ${TORCH_CXX_FLAGS})
endfunction()
