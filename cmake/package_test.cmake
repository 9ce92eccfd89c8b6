# The installed package, used as a user would (run by the test test_package):
#   1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix;
#   2. the prefix holds the libraries, the headers, the program, the bundled model and the package files;
#   3. examples/teacher_student (a model of one's own) configures against the prefix only and builds;
#      its library calls check the curve against a closed form and validate agreeing and disagreeing
#      with a term broken, and every command of the model runs through hdat's command-line front end
#      with the exit code it must give (tests/examples/cli_commands.sh);
#   4. the example's compile command has none of hdat's own build flags: no -march, no warning
#      options, no -fopenmp, no doctest or CLI11, and no path into hdat's source tree;
#   5. the installed program finds its bundled model (in PREFIX/share/hdat) and analyses it.
# Arguments: BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER [CXX_FLAGS].
cmake_minimum_required(VERSION 3.25)

function(fail)
  string(JOIN "" message ${ARGN})
  message(FATAL_ERROR "test_package: ${message}")
endfunction()

function(run)  # run(COMMAND...) with its output shown; fails on a non-zero exit
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "$ ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    fail("`${ARGN}` exited with ${rc}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(consumer ${WORK_DIR}/teacher_student)
file(REMOVE_RECURSE ${WORK_DIR})

# 1-2. Install and look at what arrived.
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/hdat/core/integrate.hpp include/hdat/core/exit_code.hpp include/hdat/llama/checkpoint.hpp
          include/hdat/core/harness.hpp include/hdat/app/command_line.hpp lib/libhdat_core.a lib/libhdat_cli.a lib/cmake/hdat/hdatConfig.cmake lib/cmake/hdat/hdatConfigVersion.cmake
          lib/cmake/hdat/hdatTargets.cmake share/hdat/models/stories260K/stories260K.bin
          share/hdat/models/stories260K/LICENSE bin/hdat)
  if(NOT EXISTS ${prefix}/${f})
    fail("the install has no ${f}")
  endif()
endforeach()
file(READ ${prefix}/lib/cmake/hdat/hdatTargets.cmake targets)
foreach(t hdat::core hdat::settings hdat::models hdat::validation_specialization hdat::validation_polarization
          hdat::validation_tied_attention hdat::validation_geometry hdat::validation_sinks
          hdat::validation_committee hdat::app hdat::cli)
  if(NOT targets MATCHES "add_library\\(${t} ")
    fail("the package does not export ${t}")
  endif()
endforeach()
foreach(leak -march -Wall doctest CLI11 ${SOURCE_DIR} ${BUILD_DIR})
  if(targets MATCHES "${leak}")
    fail("the exported targets mention '${leak}'")
  endif()
endforeach()

# 3. The example, against the prefix alone.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/teacher_student -B ${consumer} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
# The package's hdat_DATA_DIR is the prefix's share/hdat (not a dependency's prefix: fmt's config, read
# by find_dependency, redefines PACKAGE_PREFIX_DIR).
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/teacher_student -B ${consumer}
                OUTPUT_VARIABLE configure_out)
if(NOT configure_out MATCHES "data in ${prefix}/share/hdat")
  fail("hdatConfig.cmake's hdat_DATA_DIR is not ${prefix}/share/hdat: ${configure_out}")
endif()
run(${CMAKE_COMMAND} --build ${consumer})
run(${consumer}/teacher_student_calls)
run(bash ${SOURCE_DIR}/tests/examples/cli_commands.sh ${consumer}/teacher_student ${WORK_DIR}/cli)
# Bad input is refused by hdat's parameter layer (the example's exit code 2). The matrix T it reads is
# allocated inside the (possibly -march=native) library and freed by the example: with Eigen's
# alignment not fixed for both, this is where an AVX-512 library and a plain consumer crash.
execute_process(COMMAND ${consumer}/teacher_student_calls eta=3 RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "eta")
  fail("the example accepted eta=3 (exit ${rc}: ${err})")
endif()

# 4. What the consumer was compiled with (every unit: the model, the command-line program, the library calls).
file(READ ${consumer}/compile_commands.json commands)
string(JSON units LENGTH ${commands})
math(EXPR last "${units} - 1")
foreach(unit RANGE ${last})
  string(JSON command GET ${commands} ${unit} command)
  message(STATUS "the example's compile command: ${command}")
  foreach(leak "-march" " -W" "-fopenmp" "doctest" "CLI11" "${SOURCE_DIR}/include" "${SOURCE_DIR} " "${BUILD_DIR}/generated")
    string(FIND "${command}" "${leak}" at)
    if(NOT at EQUAL -1)
      fail("a consumer of hdat::core is compiled with '${leak}': ${command}")
    endif()
  endforeach()
  foreach(needed "-DEIGEN_MAX_ALIGN_BYTES=" "-DEIGEN_MAX_STATIC_ALIGN_BYTES=" "${prefix}/include" "++20")  # -std=c++20 or gnu++20: the consumer's choice of extensions
    string(FIND "${command}" "${needed}" at)
    if(at EQUAL -1)
      fail("a consumer of hdat::core lacks '${needed}': ${command}")
    endif()
  endforeach()
endforeach()

# 5. The installed program and its bundled model (short analysis: 2 documents of 64 tokens).
run(${prefix}/bin/hdat geometry --set documents=2 --set tokens=64 --set plots=false --quiet --out ${WORK_DIR}/geometry)
file(READ ${WORK_DIR}/geometry/run.json record)
string(FIND "${record}" "${prefix}/share/hdat/models/stories260K/stories260K.bin" at)
if(at EQUAL -1)
  fail("the installed program did not read the model installed beside it")
endif()
message(STATUS "test_package: install, example and consumer flags all as expected")
