//===- Device.cpp - device memory and device queries of the public API ----===//

#include "kfuse/Compiler.h"
#include "runtime/CudaDriver.h"
#include "runtime/Workspace.h"

#include <utility>

namespace kfuse {

using runtime::Driver;

Dims::Dims(std::initializer_list<int64_t> dims) {
  if (dims.size() > kMaxRank) {
    rank_ = -1;
    return;
  }
  for (int64_t d : dims)
    dims_[rank_++] = d;
}

Dims::Dims(const std::vector<int64_t> &dims) {
  if (dims.size() > kMaxRank) {
    rank_ = -1;
    return;
  }
  for (int64_t d : dims)
    dims_[rank_++] = d;
}

bool Dims::operator==(const Dims &other) const {
  if (rank_ != other.rank_)
    return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i])
      return false;
  return true;
}

Expected<DeviceInfo> device() {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return DeviceInfo{(*d)->name, (*d)->multiprocessors, (*d)->computeMajor,
                    (*d)->computeMinor};
}

Expected<DeviceMemory> deviceMemory() {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  DeviceMemory memory;
  size_t free = 0, total = 0;
  KFUSE_RETURN_IF_ERROR(
      (*d)->check((*d)->cuMemGetInfo_v2(&free, &total), "cuMemGetInfo"));
  memory.freeBytes = free;
  memory.totalBytes = total;
  Expected<runtime::WorkspaceUsage> usage = runtime::workspaceUsage(**d);
  if (!usage)
    return usage.error();
  memory.workspaceReservedBytes = usage->reservedBytes;
  memory.workspaceUsedBytes = usage->usedBytes;
  return memory;
}

Status releaseWorkspaceMemory() {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return runtime::trimWorkspaces(**d);
}

Status synchronize() {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return (*d)->check((*d)->cuCtxSynchronize(), "cuCtxSynchronize");
}

Expected<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  DeviceBuffer buffer;
  CUdeviceptr ptr = 0;
  KFUSE_RETURN_IF_ERROR(
      (*d)->check((*d)->cuMemAlloc_v2(&ptr, bytes ? bytes : 1), "cuMemAlloc"));
  buffer.ptr_ = ptr;
  buffer.bytes_ = bytes;
  return buffer;
}

Expected<DeviceBuffer> DeviceBuffer::fromHost(const HostTensor &tensor) {
  Expected<DeviceBuffer> buffer = allocate(tensor.sizeInBytes());
  if (!buffer)
    return buffer.error();
  KFUSE_RETURN_IF_ERROR(
      buffer->copyFromHost(tensor.data(), tensor.sizeInBytes()));
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_)
    return;
  Expected<Driver *> d = Driver::get();
  if (d)
    (*d)->cuMemFree_v2(ptr_);
}

Expected<std::vector<double>>
timeOnDevice(const std::function<Status()> &work, int repetitions,
             int warmup) {
  Expected<Driver *> driver = Driver::get();
  if (!driver)
    return driver.error();
  Driver &d = **driver;
  for (int i = 0; i < warmup; ++i)
    KFUSE_RETURN_IF_ERROR(work());
  CUevent start = nullptr, stop = nullptr;
  Status status = d.check(d.cuEventCreate(&start, CU_EVENT_DEFAULT),
                          "cuEventCreate");
  if (status)
    status = d.check(d.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> times;
  for (int i = 0; status && i < repetitions; ++i) {
    status = d.check(d.cuEventRecord(start, nullptr), "cuEventRecord");
    if (status)
      status = work();
    if (status)
      status = d.check(d.cuEventRecord(stop, nullptr), "cuEventRecord");
    if (status)
      status = d.check(d.cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    if (status)
      status = d.check(d.cuEventElapsedTime_v2(&ms, start, stop),
                       "cuEventElapsedTime");
    times.push_back(ms);
  }
  if (start)
    d.cuEventDestroy_v2(start);
  if (stop)
    d.cuEventDestroy_v2(stop);
  if (!status)
    return status.error();
  return times;
}

static Status checkSize(size_t bytes, size_t capacity, const char *what) {
  if (bytes <= capacity)
    return Status::ok();
  return Error(ErrorCode::InvalidArgument,
               std::string(what) + ": " + std::to_string(bytes) +
                   " bytes do not fit a buffer of " +
                   std::to_string(capacity));
}

Status DeviceBuffer::copyFromHost(const void *src, size_t bytes) {
  KFUSE_RETURN_IF_ERROR(checkSize(bytes, bytes_, "copyFromHost"));
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return (*d)->check((*d)->cuMemcpyHtoD_v2(ptr_, src, bytes), "cuMemcpyHtoD");
}

Status DeviceBuffer::copyToHost(void *dst, size_t bytes) const {
  KFUSE_RETURN_IF_ERROR(checkSize(bytes, bytes_, "copyToHost"));
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return (*d)->check((*d)->cuMemcpyDtoH_v2(dst, ptr_, bytes), "cuMemcpyDtoH");
}

Status DeviceBuffer::fill(unsigned char value) {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return (*d)->check((*d)->cuMemsetD8_v2(ptr_, value, bytes_), "cuMemsetD8");
}

Expected<DeviceStream> DeviceStream::create() {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  CUstream stream = nullptr;
  KFUSE_RETURN_IF_ERROR((*d)->check(
      (*d)->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  DeviceStream result;
  result.stream_ = stream;
  return result;
}

DeviceStream::DeviceStream(DeviceStream &&other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

DeviceStream &DeviceStream::operator=(DeviceStream &&other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

DeviceStream::~DeviceStream() {
  if (!stream_)
    return;
  if (Expected<Driver *> d = Driver::get())
    (*d)->cuStreamDestroy_v2(static_cast<CUstream>(stream_));
}

Status DeviceStream::synchronize() const {
  Expected<Driver *> d = Driver::get();
  if (!d)
    return d.error();
  return (*d)->check((*d)->cuStreamSynchronize(static_cast<CUstream>(stream_)),
                     "cuStreamSynchronize");
}

} // namespace kfuse
