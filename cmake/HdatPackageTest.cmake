# test_package (default suite): install this build into a scratch prefix, then configure, build and
# run examples/teacher_student against it as a user would, and check what a consumer of hdat::core
# is compiled with (cmake/package_test.cmake).
set(hdat_package_test_flags "")
if(HDAT_SANITIZE)  # the installed libraries are instrumented: the example must link the runtimes
  set(hdat_package_test_flags "-fsanitize=address,undefined")
endif()
add_test(NAME test_package
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DWORK_DIR=${PROJECT_BINARY_DIR}/package_test -DGENERATOR=${CMAKE_GENERATOR}
          -DCXX_COMPILER=${CMAKE_CXX_COMPILER} "-DCXX_FLAGS=${hdat_package_test_flags}"
          -P ${PROJECT_SOURCE_DIR}/cmake/package_test.cmake)
set_tests_properties(test_package PROPERTIES LABELS unit TIMEOUT 600 RUN_SERIAL FALSE)
