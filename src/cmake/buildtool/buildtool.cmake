# Helpers for the CMakeLists.txt that buildtool generates. Generated; do not edit.
# Every rule here exists because a split runtime/compiler build breaks without it.
include_guard(GLOBAL)
include(GenerateExportHeader)

# Object libraries end up inside shared libraries.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
# Hidden by default: a library exports only what its export macro marks.
set(CMAKE_CXX_VISIBILITY_PRESET hidden)
set(CMAKE_VISIBILITY_INLINES_HIDDEN ON)
set(CMAKE_CXX_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

# All libraries in <build>/lib, executables in <build>/bin.
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
set(CMAKE_ARCHIVE_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")

# The build tree gets the same $ORIGIN-relative RUNPATH as an install: no build paths in binaries.
set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  # RUNPATH, not RPATH: RUNPATH lets LD_LIBRARY_PATH override and is not inherited.
  add_link_options("LINKER:--enable-new-dtags")
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  # Reproducible objects: no absolute source or build paths in debug info or __FILE__.
  add_compile_options("-ffile-prefix-map=${CMAKE_SOURCE_DIR}/=" "-ffile-prefix-map=${CMAKE_BINARY_DIR}/=")
endif()
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  # Hardened binaries (verify-linkage checks them with [verify] hardening = true): full RELRO
  # (no lazy binding, so the GOT turns read-only after relocation) and a non-executable stack.
  add_link_options("LINKER:-z,relro,-z,now" "LINKER:-z,noexecstack")
endif()
# Executables are position independent (PIE) where the toolchain can link them so: with policy
# CMP0083 NEW (cmake_minimum_required 3.24), POSITION_INDEPENDENT_CODE above then adds -pie.
include(CheckPIESupported)
check_pie_supported()
if(APPLE)
  set(BT_ORIGIN "@loader_path")
else()
  set(BT_ORIGIN "$ORIGIN")
endif()

# --no-as-needed scoped to exactly one library (Debian's gcc passes --as-needed by default,
# which drops a library whose only use is its static registrations).
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(CMAKE_LINK_LIBRARY_USING_bt_no_as_needed
    "LINKER:--push-state,--no-as-needed" "<LINK_ITEM>" "LINKER:--pop-state")
else()
  set(CMAKE_LINK_LIBRARY_USING_bt_no_as_needed "<LINK_ITEM>")
endif()
set(CMAKE_LINK_LIBRARY_USING_bt_no_as_needed_SUPPORTED TRUE)

# Wheels keep libraries under <package>/lib so the package's loader finds them.
if(SKBUILD)
  set(BT_LIB_DESTINATION "${BT_PACKAGE}/lib")
  set(BT_BIN_DESTINATION "${BT_PACKAGE}/bin")
else()
  set(BT_LIB_DESTINATION "lib")
  set(BT_BIN_DESTINATION "bin")
endif()

set(BT_EXPORT_INCLUDE_DIR "${CMAKE_BINARY_DIR}/buildtool/include")

function(bt_external name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "FIND_PACKAGE" "LINK")
  if(ARG_FIND_PACKAGE)
    find_package(${ARG_FIND_PACKAGE} REQUIRED)
  endif()
  add_library(bt_external_${name} INTERFACE)
  target_link_libraries(bt_external_${name} INTERFACE ${ARG_LINK})
endfunction()

function(bt_object_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OWNER" "SOURCES")
  add_library(${name} OBJECT ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES BT_OWNER "${ARG_OWNER}")
endfunction()

function(bt_build_info name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "PREFIX;VERSION" "")
  # The commit comes from -D<PREFIX>_GIT_COMMIT, then the environment, then git; else "unknown".
  set(commit "${${ARG_PREFIX}_GIT_COMMIT}")
  if(NOT commit AND DEFINED ENV{${ARG_PREFIX}_GIT_COMMIT})
    set(commit "$ENV{${ARG_PREFIX}_GIT_COMMIT}")
  endif()
  if(NOT commit)
    find_package(Git QUIET)
    if(GIT_FOUND)
      execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse HEAD
        WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
        OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
        RESULT_VARIABLE git_result ERROR_QUIET)
      if(NOT git_result EQUAL 0)
        set(commit "")
      endif()
    endif()
  endif()
  if(NOT commit)
    set(commit "unknown")
  endif()
  set(build_type "${CMAKE_BUILD_TYPE}")
  if(NOT build_type)
    set(build_type "unspecified")
  endif()
  target_compile_definitions(${name} PRIVATE
    "${ARG_PREFIX}_VERSION=\"${ARG_VERSION}\""
    "${ARG_PREFIX}_GIT_COMMIT=\"${commit}\""
    "${ARG_PREFIX}_COMPILER=\"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\""
    "${ARG_PREFIX}_BUILD_TYPE=\"${build_type}\"")
endfunction()

function(bt_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT_NAME;EXPORT_MACRO"
    "SOURCES;LINKS;OBJECTS;EXTERNALS;INCLUDE_DIRS")
  add_library(${name} SHARED ${ARG_SOURCES})
  string(TOUPPER "${ARG_OUTPUT_NAME}_EXPORTS" define_symbol)
  set_target_properties(${name} PROPERTIES
    OUTPUT_NAME "${ARG_OUTPUT_NAME}"
    DEFINE_SYMBOL "${define_symbol}"
    INSTALL_RPATH "${BT_ORIGIN}")
  generate_export_header(${name}
    BASE_NAME "${ARG_OUTPUT_NAME}"
    EXPORT_MACRO_NAME "${ARG_EXPORT_MACRO}"
    EXPORT_FILE_NAME "${BT_EXPORT_INCLUDE_DIR}/${ARG_OUTPUT_NAME}_export.h")
  list(TRANSFORM ARG_INCLUDE_DIRS PREPEND "${CMAKE_CURRENT_SOURCE_DIR}/")
  target_include_directories(${name} PUBLIC ${ARG_INCLUDE_DIRS} "${BT_EXPORT_INCLUDE_DIR}")
  # PUBLIC: whoever links this library gets its links too (the compiler brings the runtime).
  target_link_libraries(${name} PUBLIC ${ARG_LINKS})
  foreach(external IN LISTS ARG_EXTERNALS)
    target_link_libraries(${name} PUBLIC bt_external_${external})
  endforeach()
  foreach(object IN LISTS ARG_OBJECTS)
    # The object code goes into this library only; linking the object library PRIVATE gives it
    # the usage requirements (includes) of this library's links without spreading its objects.
    target_sources(${name} PRIVATE $<TARGET_OBJECTS:${object}>)
    target_compile_definitions(${object} PRIVATE "${define_symbol}")
    target_include_directories(${object} PRIVATE ${ARG_INCLUDE_DIRS} "${BT_EXPORT_INCLUDE_DIR}")
    target_link_libraries(${object} PRIVATE ${ARG_LINKS})
  endforeach()
  install(TARGETS ${name}
    LIBRARY DESTINATION "${BT_LIB_DESTINATION}" COMPONENT ${name}
    RUNTIME DESTINATION "${BT_LIB_DESTINATION}" COMPONENT ${name})
endfunction()

function(bt_executable name kind)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "" "SOURCES;LINKS;NO_AS_NEEDED;ARGS")
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES INSTALL_RPATH "${BT_ORIGIN}/../lib")
  foreach(library IN LISTS ARG_LINKS)
    if(library IN_LIST ARG_NO_AS_NEEDED)
      target_link_libraries(${name} PRIVATE "$<LINK_LIBRARY:bt_no_as_needed,${library}>")
    else()
      target_link_libraries(${name} PRIVATE ${library})
    endif()
  endforeach()
  if(kind STREQUAL "TEST")
    add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS})
  elseif(NOT SKBUILD)
    install(TARGETS ${name} RUNTIME DESTINATION "${BT_BIN_DESTINATION}" COMPONENT executables)
  endif()
endfunction()

function(bt_python_package directory)
  if(SKBUILD)
    install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/${directory}/"
      DESTINATION "${BT_PACKAGE}" COMPONENT python
      PATTERN "__pycache__" EXCLUDE
      PATTERN "*.pyc" EXCLUDE)
  endif()
endfunction()
