# `cmake --install build --prefix P`: the libraries (P/lib), the public headers (P/include/hdat/...),
# the hdat program (P/bin), the bundled model (P/share/hdat/models/...) and the CMake package
# (P/lib/cmake/hdat: hdatConfig.cmake, hdatConfigVersion.cmake, hdatTargets.cmake with the targets
# in the hdat:: namespace). A consumer: find_package(hdat REQUIRED) and
# target_link_libraries(app PRIVATE hdat::core) (or hdat::validation_<model>, hdat::models).
include(CMakePackageConfigHelpers)

set(HDAT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/hdat CACHE STRING "Where the CMake package goes (relative to the prefix)")
set(HDAT_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/hdat)

# Every library of the build whose name starts with hdat_ is part of the package, exported without
# the prefix: hdat_core -> hdat::core, hdat_validation_specialization -> hdat::validation_specialization.
# hdat_build_flags (our compile flags) and the test helpers are not.
hdat_compiled_targets(hdat_all_targets)
set(hdat_exported hdat_settings)
foreach(t ${hdat_all_targets})
  get_target_property(type ${t} TYPE)
  if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "SHARED_LIBRARY")
    if(t MATCHES "^hdat_(.+)$")
      list(APPEND hdat_exported ${t})
    endif()
  endif()
endforeach()
foreach(t ${hdat_exported})
  string(REGEX REPLACE "^hdat_" "" export_name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
install(TARGETS ${hdat_exported} EXPORT hdatTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hdat DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(EXPORT hdatTargets NAMESPACE hdat:: DESTINATION ${HDAT_INSTALL_CMAKEDIR})
if(TARGET hdat)
  install(TARGETS hdat RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The bundled model with its licence and attribution (the installed program's default model).
install(DIRECTORY ${HDAT_SOURCE_DATA_DIR}/ DESTINATION ${HDAT_INSTALL_DATADIR})

# The options a consumer must agree with, recorded in the package (hdatConfig.cmake reports them).
set(HDAT_PACKAGE_NATIVE ${HDAT_NATIVE})
set(HDAT_PACKAGE_MPI ${HDAT_MPI})
set(HDAT_PACKAGE_ONEDNN ${HDAT_ONEDNN})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hdatConfig.cmake.in ${PROJECT_BINARY_DIR}/package/hdatConfig.cmake
  INSTALL_DESTINATION ${HDAT_INSTALL_CMAKEDIR} PATH_VARS HDAT_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/hdatConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/hdatConfig.cmake ${PROJECT_BINARY_DIR}/package/hdatConfigVersion.cmake
  DESTINATION ${HDAT_INSTALL_CMAKEDIR})
