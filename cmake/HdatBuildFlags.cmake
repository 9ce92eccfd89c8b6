# How hdat's own targets are compiled: warnings, -march=native, OpenMP, sanitizers, precompiled
# headers. These are build details of this project: hdat_apply_build_flags() puts them on every target
# of the build PRIVATELY (as $<BUILD_INTERFACE:...>), so neither the exported package nor a project that
# includes hdat with add_subdirectory sees them.

add_library(hdat_build_flags INTERFACE)
# -Wno-restrict: GCC 12 reports a false -Wrestrict on `"literal" + std::string&&` (GCC bug 105329).
# -Wno-maybe-uninitialized: GCC 12 false positives inside Eigen's AVX-512 kernels (-march=native).
target_compile_options(hdat_build_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wno-restrict -Wno-maybe-uninitialized
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

function(hdat_apply_build_flags)
  hdat_compiled_targets(targets)
  foreach(t ${targets})
    target_link_libraries(${t} PRIVATE $<BUILD_INTERFACE:hdat_build_flags>)
  endforeach()
endfunction()
