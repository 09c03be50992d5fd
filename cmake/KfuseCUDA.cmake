# The CUDA toolkit: cuda.h for the driver API's types (libcuda.so.1 itself
# is opened at run time), libdevice for math functions, ptxas for tests.
set(KFUSE_CUDA_HOME "$ENV{CUDA_HOME}")
if(NOT KFUSE_CUDA_HOME)
  set(KFUSE_CUDA_HOME /usr/local/cuda)
endif()
find_path(KFUSE_CUDA_INCLUDE_DIR cuda.h HINTS ${KFUSE_CUDA_HOME}/include)
find_file(KFUSE_LIBDEVICE libdevice.10.bc
  HINTS ${KFUSE_CUDA_HOME}/nvvm/libdevice)
if(NOT KFUSE_CUDA_INCLUDE_DIR OR NOT KFUSE_LIBDEVICE)
  message(FATAL_ERROR "kfuse needs the CUDA toolkit (cuda.h and "
    "nvvm/libdevice/libdevice.10.bc) under ${KFUSE_CUDA_HOME}; set CUDA_HOME")
endif()
find_program(KFUSE_PTXAS ptxas HINTS ${KFUSE_CUDA_HOME}/bin)
message(STATUS "kfuse: CUDA toolkit ${KFUSE_CUDA_HOME}, ptxas ${KFUSE_PTXAS}")
