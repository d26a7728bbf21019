# Prepares the OpenCV 4.10.0 source tree that the superbuild compiles:
#   1. take a user's own tree (OPENCV_SOURCE_DIR) or extract Debian's verified tarball,
#   2. apply patches/*.patch (each one small concern of OpenCV's own files),
#   3. mirror our additions (modules/dnn/**) into the tree as symlinks, so OpenCV's own
#      source globs compile them into opencv_dnn and the Python generator wraps our headers.
# Re-running is cheap: extraction and patching happen again only when the tarball or a
# patch changes (a stamp records their hashes); symlinks are refreshed every time.

set(OPENCV_EXPECTED_SHA256 "4ca619efbad524c550771ab110332fc81293fb720bd03980fe58bc15f9ca3be8")

function(llm_prepare_opencv_tree out_dir)
  file(GLOB patch_files CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/patches/*.patch")
  list(SORT patch_files)
  # An edited patch re-runs this configure step, which re-extracts and re-patches the tree.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch_files})

  if(OPENCV_SOURCE_DIR)
    # A user's own tree is used in place: it must be 4.10 with our patches already applied
    # (we do not patch a user's files); our files are linked into it like into ours.
    if(NOT EXISTS "${OPENCV_SOURCE_DIR}/modules/core/include/opencv2/core/version.hpp")
      message(FATAL_ERROR "OPENCV_SOURCE_DIR=${OPENCV_SOURCE_DIR} is not an OpenCV source tree")
    endif()
    file(STRINGS "${OPENCV_SOURCE_DIR}/modules/core/include/opencv2/core/version.hpp" minor_line
         REGEX "#define CV_VERSION_MINOR[ \t]+[0-9]+")
    if(NOT minor_line MATCHES "[ \t]10$")
      message(FATAL_ERROR "OPENCV_SOURCE_DIR=${OPENCV_SOURCE_DIR}: OpenCV 4.10 is required (${minor_line})")
    endif()
    foreach(p ${patch_files})
      execute_process(COMMAND patch -p1 -R --dry-run -s -f -i "${p}"
                      WORKING_DIRECTORY "${OPENCV_SOURCE_DIR}" RESULT_VARIABLE applied OUTPUT_QUIET ERROR_QUIET)
      if(NOT applied EQUAL 0)
        message(FATAL_ERROR "OPENCV_SOURCE_DIR: patch ${p} is not applied; apply patches/*.patch with 'patch -p1' first")
      endif()
    endforeach()
    set(tree "${OPENCV_SOURCE_DIR}")
  else()
    if(NOT OPENCV_TARBALL OR NOT EXISTS "${OPENCV_TARBALL}")
      message(FATAL_ERROR "OPENCV_TARBALL is not set or missing ('${OPENCV_TARBALL}'); "
                          "run ./setup.sh, which downloads Debian's opencv_4.10.0+dfsg.orig.tar.xz")
    endif()
    set(tree "${CMAKE_BINARY_DIR}/opencv-src")
    set(stamp_file "${CMAKE_BINARY_DIR}/opencv-src.stamp")
    file(SHA256 "${OPENCV_TARBALL}" tar_hash)
    if(NOT tar_hash STREQUAL OPENCV_EXPECTED_SHA256)
      message(FATAL_ERROR "${OPENCV_TARBALL}: sha256 ${tar_hash} != expected ${OPENCV_EXPECTED_SHA256}")
    endif()
    set(stamp "${tar_hash}")
    foreach(p ${patch_files})
      file(SHA256 "${p}" h)
      string(APPEND stamp ";${h}")
    endforeach()
    set(old_stamp "")
    if(EXISTS "${stamp_file}")
      file(READ "${stamp_file}" old_stamp)
    endif()
    if(NOT old_stamp STREQUAL stamp OR NOT EXISTS "${tree}/CMakeLists.txt")
      message(STATUS "Extracting OpenCV 4.10.0 into ${tree}")
      file(REMOVE_RECURSE "${tree}" "${CMAKE_BINARY_DIR}/opencv-extract")
      file(ARCHIVE_EXTRACT INPUT "${OPENCV_TARBALL}" DESTINATION "${CMAKE_BINARY_DIR}/opencv-extract")
      file(RENAME "${CMAKE_BINARY_DIR}/opencv-extract/opencv-4.10.0" "${tree}")
      file(REMOVE_RECURSE "${CMAKE_BINARY_DIR}/opencv-extract")
      foreach(p ${patch_files})
        message(STATUS "Applying ${p}")
        execute_process(COMMAND patch -p1 -s -f -i "${p}" WORKING_DIRECTORY "${tree}" RESULT_VARIABLE rc)
        if(NOT rc EQUAL 0)
          message(FATAL_ERROR "patch ${p} does not apply to OpenCV 4.10.0")
        endif()
      endforeach()
      file(WRITE "${stamp_file}" "${stamp}")
    endif()
  endif()

  # Mirror our files. Per-file links: CMake's GLOB_RECURSE lists linked files but does not
  # descend into linked directories.
  set(ours "${CMAKE_SOURCE_DIR}/modules/dnn")
  file(GLOB_RECURSE our_files RELATIVE "${ours}" CONFIGURE_DEPENDS
       "${ours}/include/*.hpp" "${ours}/src/*.cpp" "${ours}/src/*.hpp" "${ours}/src/*.h"
       "${ours}/misc/*")
  # Drop links to files that were removed or renamed since the last run.
  file(GLOB_RECURSE old_links LIST_DIRECTORIES false "${tree}/modules/dnn/src/llm/*")
  foreach(l ${old_links})
    if(IS_SYMLINK "${l}" AND NOT EXISTS "${l}")
      file(REMOVE "${l}")
    endif()
  endforeach()
  foreach(f ${our_files})
    set(dst "${tree}/modules/dnn/${f}")
    if(EXISTS "${dst}" AND NOT IS_SYMLINK "${dst}")
      message(FATAL_ERROR "${f} would replace OpenCV's own file; rename ours")
    endif()
    get_filename_component(d "${dst}" DIRECTORY)
    file(MAKE_DIRECTORY "${d}")
    file(CREATE_LINK "${ours}/${f}" "${dst}" SYMBOLIC)
  endforeach()
  # The file list goes into OpenCV's configure arguments, so adding or removing one of our
  # files re-runs OpenCV's configure (its globs are evaluated only then).
  string(SHA256 list_hash "${our_files}")
  set(LLM_FILE_LIST_HASH "${list_hash}" PARENT_SCOPE)
  set(${out_dir} "${tree}" PARENT_SCOPE)
endfunction()
