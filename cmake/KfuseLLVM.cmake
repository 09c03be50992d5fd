# LLVM and MLIR 22 from Debian (/usr/lib/llvm-22).
#
# Everything kfuse ships links LLVM and MLIR statically: libkfuse.so and the
# tools then run where no libLLVM.so is installed (the GPU machine), and
# kfuse's LLVM cannot clash with another LLVM in a user's process (PyTorch,
# Triton). MLIR's own CMake targets would link libLLVM.so, so we name the
# static archives ourselves; the linker keeps only what is used.

find_package(MLIR REQUIRED CONFIG
  HINTS /usr/lib/llvm-22/lib/cmake/mlir)
message(STATUS "kfuse: MLIR ${MLIR_DIR}, LLVM ${LLVM_PACKAGE_VERSION}")

list(APPEND CMAKE_MODULE_PATH ${MLIR_CMAKE_DIR} ${LLVM_CMAKE_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
# mlir-tblgen reads the directory include paths.
include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})

find_program(KFUSE_LIT lit HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
find_program(KFUSE_FILECHECK FileCheck HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)

file(GLOB KFUSE_MLIR_ARCHIVES ${LLVM_LIBRARY_DIR}/libMLIR*.a)
file(GLOB KFUSE_LLVM_ARCHIVES ${LLVM_LIBRARY_DIR}/libLLVM*.a)
find_library(KFUSE_ZSTD NAMES zstd libzstd.so.1 REQUIRED)
find_library(KFUSE_TINFO NAMES tinfo REQUIRED)
find_library(KFUSE_ZLIB NAMES z REQUIRED)

separate_arguments(KFUSE_LLVM_DEFINITIONS UNIX_COMMAND "${LLVM_DEFINITIONS}")

# Flags for every translation unit that includes LLVM or MLIR headers:
# Debian's LLVM is built without RTTI and exceptions.
function(kfuse_llvm_target target)
  target_include_directories(${target} SYSTEM PRIVATE
    ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  target_include_directories(${target} PRIVATE
    ${KFUSE_SOURCE_DIR} ${KFUSE_BINARY_DIR} ${KFUSE_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE ${KFUSE_LLVM_DEFINITIONS})
  target_compile_options(${target} PRIVATE -fno-rtti -fno-exceptions
    -Wall -Wno-unused-parameter)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# Links the static LLVM and MLIR archives into `target`, with the kfuse
# archives named after it in one group (they and MLIR refer to each other).
function(kfuse_link_llvm_static target)
  target_link_libraries(${target} PRIVATE
    -Wl,--start-group ${ARGN} ${KFUSE_MLIR_ARCHIVES} ${KFUSE_LLVM_ARCHIVES}
    -Wl,--end-group
    ${KFUSE_ZLIB} ${KFUSE_ZSTD} ${KFUSE_TINFO} pthread dl)
endfunction()
