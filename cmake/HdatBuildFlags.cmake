# How hdat's own targets are compiled: warnings, -march=native, OpenMP, sanitizers, precompiled
# headers. These are build details of this project: hdat_apply_build_flags() puts them on every target
# of the build PRIVATELY (as $<BUILD_INTERFACE:...>), so neither the exported package nor a project that
# includes hdat with add_subdirectory sees them.

add_library(hdat_build_flags INTERFACE)
# -Wno-restrict: GCC 12 reports a false -Wrestrict on `"literal" + std::string&&` (GCC bug 105329).
# -Wno-maybe-uninitialized: GCC 12 false positives inside Eigen's AVX-512 kernels (-march=native).
target_compile_options(hdat_build_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow
  "$<$<CXX_COMPILER_ID:GNU>:-Wno-restrict;-Wno-maybe-uninitialized>"  # GCC's options (clang: the fuzz build)
  # GCC 12 reports false -Wuninitialized inside its own AVX-512 intrinsics (GCC bug 105593, fixed in 13),
  # and a false -Warray-bounds on Eigen's 512-bit loads of fixed 3-vectors in code paths never taken.
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-uninitialized>
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-array-bounds>
  $<$<BOOL:${HDAT_WERROR}>:-Werror>
  $<$<BOOL:${HDAT_NATIVE}>:-march=native>)
# hdat parallelises explicitly (seeds, sample chunks, sweep points) with results independent of the
# thread count; Eigen's own OpenMP threading inside products would nest and oversubscribe.
target_compile_definitions(hdat_build_flags INTERFACE EIGEN_DONT_PARALLELIZE)
target_link_libraries(hdat_build_flags INTERFACE OpenMP::OpenMP_CXX)

if(HDAT_SANITIZE OR HDAT_FUZZ)
  # Every finding stops the program (no recovery), with a stack that names our frames.
  set(hdat_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  if(HDAT_FUZZ)  # libFuzzer's coverage instrumentation everywhere; its main() only in the fuzz targets
    list(APPEND hdat_sanitize_flags -fsanitize=fuzzer-no-link)
  endif()
  target_compile_options(hdat_build_flags INTERFACE ${hdat_sanitize_flags})
  target_link_options(hdat_build_flags INTERFACE ${hdat_sanitize_flags})
endif()

# Every target defined in `dir` and the folders below it.
function(hdat_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    hdat_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The compiled targets of this build (libraries, executables, object libraries).
function(hdat_compiled_targets out)
  hdat_targets_below(${PROJECT_SOURCE_DIR} all)
  set(compiled "")
  foreach(t ${all})
    get_target_property(type ${t} TYPE)
    if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      list(APPEND compiled ${t})
    endif()
  endforeach()
  set(${out} ${compiled} PARENT_SCOPE)
endfunction()

# Precompiled headers (HDAT_PRECOMPILED_HEADERS): the standard library, Eigen, nlohmann-json, fmt and
# Boost.Random take 6-8 s to parse in every translation unit, more than many units spend on their
# own code. They are parsed once, in hdat_pch, and every target whose flags match reuses that
# precompiled header (GCC refuses a header built with other code-generation options or macros, so a
# target with options of its own, e.g. -fcx-limited-range, precompiles its own copy). Never exported.
set(hdat_pch_headers <algorithm> <array> <chrono> <cmath> <cstdint> <filesystem> <fstream> <functional> <limits> <map>
    <memory> <numeric> <optional> <set> <sstream> <stdexcept> <string> <vector>
    <Eigen/Dense> <nlohmann/json.hpp> <fmt/format.h> <boost/random/mersenne_twister.hpp> <boost/random/normal_distribution.hpp>)
# Targets that add headers of their own to their precompiled header (the command-line front end: CLI11, 10 s a unit).
set(hdat_pch_extra_hdat_cli <CLI/CLI.hpp>)

function(hdat_apply_build_flags)
  hdat_compiled_targets(targets)
  foreach(t ${targets})
    target_link_libraries(${t} PRIVATE $<BUILD_INTERFACE:hdat_build_flags>)
  endforeach()
  if(NOT HDAT_PRECOMPILED_HEADERS)
    return()
  endif()
  # A second copy, hdat_pch_pic, for position-independent code (-fPIC: the libraries inside the Python
  # module, a shared object), made when a target needs it: GCC refuses a header built with the
  # compiler's default -fPIE in a -fPIC unit and the other way round.
  add_library(hdat_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
  target_link_libraries(hdat_pch PRIVATE hdat_settings hdat_build_flags)
  target_precompile_headers(hdat_pch PRIVATE ${hdat_pch_headers})
  foreach(t ${targets})
    if(t STREQUAL "hdat_doctest_main")  # doctest's main alone: nothing to precompile
      continue()
    endif()
    # A unit with compile options of its own does not use the shared header: one with another language
    # standard cannot (integrate.cpp: C++17), and GCC silently replaces a unit's optimisation options by
    # those saved in the header (metrics.cpp's -ffp-contract=off was lost: 46 FMAs instead of 0, and the
    # geometry evaluator's exact ties broke).
    get_target_property(sources ${t} SOURCES)
    get_target_property(source_dir ${t} SOURCE_DIR)
    foreach(src ${sources})
      if(NOT IS_ABSOLUTE ${src} AND NOT src MATCHES "^\\$<")
        set(src ${source_dir}/${src})
      endif()
      get_source_file_property(options ${src} TARGET_DIRECTORY ${t} COMPILE_OPTIONS)
      if(options)
        set_source_files_properties(${src} TARGET_DIRECTORY ${t} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endforeach()
    get_target_property(own_options ${t} COMPILE_OPTIONS)
    if(own_options OR DEFINED hdat_pch_extra_${t})
      target_precompile_headers(${t} PRIVATE ${hdat_pch_headers} ${hdat_pch_extra_${t}})
    else()
      get_target_property(pic ${t} POSITION_INDEPENDENT_CODE)
      get_target_property(type ${t} TYPE)
      if(pic OR type STREQUAL "MODULE_LIBRARY" OR type STREQUAL "SHARED_LIBRARY")
        if(NOT TARGET hdat_pch_pic)
          add_library(hdat_pch_pic OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
          target_link_libraries(hdat_pch_pic PRIVATE hdat_settings hdat_build_flags)
          target_precompile_headers(hdat_pch_pic PRIVATE ${hdat_pch_headers})
          set_target_properties(hdat_pch_pic PROPERTIES POSITION_INDEPENDENT_CODE ON)
        endif()
        target_precompile_headers(${t} REUSE_FROM hdat_pch_pic)
      else()
        target_precompile_headers(${t} REUSE_FROM hdat_pch)
      endif()
    endif()
  endforeach()
endfunction()
