//===- CudaDriver.cpp - the CUDA driver, opened at run time ---------------===//

#include "runtime/CudaDriver.h"

#include <dlfcn.h>

#include <mutex>

namespace kfuse::runtime {

static bool isSticky(CUresult result) {
  switch (result) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    return true;
  default:
    return false;
  }
}

Status Driver::check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return Status::ok();
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(result, &name);
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  std::string message = std::string(call) + " failed: " +
                        (name ? name : "CUresult " + std::to_string(result)) +
                        (text ? std::string(" (") + text + ")" : "");
  if (isSticky(result)) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    if (!broken.exchange(true))
      brokenReason = message;
    message += "; the CUDA context is now unusable and kfuse launches "
               "nothing more in this process";
  }
  return Error(ErrorCode::DeviceError, message);
}

Status Driver::activate() {
  if (broken.load())
    return Error(ErrorCode::DeviceError,
                 "the CUDA context is unusable after an earlier error: " +
                     brokenReason);
  return check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Status Driver::open() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return Error(ErrorCode::NoDevice,
                 std::string("no CUDA driver: cannot open libcuda.so.1 (") +
                     dlerror() + ")");
#define KFUSE_LOAD(symbol)                                                     \
  symbol = reinterpret_cast<decltype(symbol)>(dlsym(library, #symbol));       \
  if (!symbol)                                                                 \
    return Error(ErrorCode::NoDevice,                                          \
                 "the CUDA driver has no " #symbol ": too old a driver");
  KFUSE_CUDA_FUNCTIONS(KFUSE_LOAD)
#undef KFUSE_LOAD
  cuTensorMapEncodeTiled = reinterpret_cast<decltype(cuTensorMapEncodeTiled)>(
      dlsym(library, "cuTensorMapEncodeTiled"));
  graphs = true;
#define KFUSE_LOAD_OPTIONAL(symbol)                                            \
  symbol = reinterpret_cast<decltype(symbol)>(dlsym(library, #symbol));       \
  graphs = graphs && symbol;
  KFUSE_CUDA_GRAPH_FUNCTIONS(KFUSE_LOAD_OPTIONAL)
#undef KFUSE_LOAD_OPTIONAL
  CUresult init = cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE)
    return Error(ErrorCode::NoDevice, "no GPU: the CUDA driver sees none");
  if (Status s = check(init, "cuInit"); !s)
    return Error(ErrorCode::NoDevice, "no usable GPU: " + s.message());
  int count = 0;
  KFUSE_RETURN_IF_ERROR(check(cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return Error(ErrorCode::NoDevice, "no GPU: the CUDA driver sees none");
  KFUSE_RETURN_IF_ERROR(check(cuDeviceGet(&device, 0), "cuDeviceGet"));
  char deviceName[256] = {};
  cuDeviceGetName(deviceName, sizeof(deviceName), device);
  name = deviceName;
  cuDeviceGetAttribute(&multiprocessors,
                       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  cuDeviceGetAttribute(&computeMajor,
                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  cuDeviceGetAttribute(&computeMinor,
                       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  KFUSE_RETURN_IF_ERROR(check(cuDevicePrimaryCtxRetain(&context, device),
                              "cuDevicePrimaryCtxRetain"));
  return check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Expected<Driver *> Driver::get() {
  // Opened once; the driver stays for the life of the process, as the
  // primary context does.
  static Driver *driver = new Driver();
  static Status status = driver->open();
  if (!status)
    return status.error();
  KFUSE_RETURN_IF_ERROR(driver->activate());
  return driver;
}

} // namespace kfuse::runtime
