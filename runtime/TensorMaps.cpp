//===- TensorMaps.cpp - the TMA tensor maps of one launch -----------------===//

#include "runtime/TensorMaps.h"

namespace kfuse::runtime {

static Status encode(Driver &d, CUtensorMap &map, const TensorMapDesc &desc,
                     DType dtype, CUdeviceptr address, int64_t rows) {
  if (!d.cuTensorMapEncodeTiled)
    return Error(ErrorCode::DeviceError,
                 "the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12 or "
                 "later), which kernels compiled for sm_90 need");
  CUtensorMapDataType type;
  switch (dtype) {
  case DType::bf16:
    type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    break;
  case DType::f16:
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    break;
  case DType::f32: // multiplied in TF32: the tensor cores read its bits
    type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    break;
  default:
    return Error(ErrorCode::CompileFailed,
                 std::string("a TMA tensor map over a ") + dtypeName(dtype) +
                     " buffer: the kernels copy bf16, f16 and f32 operands "
                     "only");
  }
  cuuint64_t dims[3], strides[2];
  cuuint32_t box[3], elementStrides[3] = {1, 1, 1};
  for (uint32_t i = 0; i < desc.rank; ++i) {
    dims[i] = desc.dims[i];
    box[i] = desc.box[i];
    if (i > 0)
      strides[i - 1] = desc.strides[i - 1];
  }
  if (desc.rowsExtent >= 0) {
    dims[1] = cuuint64_t(rows);
    strides[1] = strides[0] * cuuint64_t(rows);
  }
  return d.check(d.cuTensorMapEncodeTiled(
                     &map, type, desc.rank, reinterpret_cast<void *>(address),
                     dims, strides, box, elementStrides,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "cuTensorMapEncodeTiled");
}

Status LaunchTensorMaps::update(Driver &d, const Plan &plan,
                                const LaunchDesc &launch,
                                const CUdeviceptr *table,
                                const int64_t *extents) {
  size_t n = launch.tensorMaps.size();
  if (maps.size() != n) {
    maps.assign(n, CUtensorMap{});
    encodedFor.assign(n, 0);
    encodedRows.assign(n, 0);
  }
  for (size_t i = 0; i < n; ++i) {
    const TensorMapDesc &desc = launch.tensorMaps[i];
    CUdeviceptr address = table[desc.buffer];
    int64_t rows = desc.rowsExtent >= 0 ? extents[desc.rowsExtent] : 0;
    if (encodedFor[i] == address && encodedRows[i] == rows)
      continue;
    encodedFor[i] = 0;
    if (Status s = encode(d, maps[i], desc, plan.buffers[desc.buffer].dtype,
                          address, rows);
        !s)
      return s;
    encodedFor[i] = address;
    encodedRows[i] = rows;
  }
  return Status::ok();
}

} // namespace kfuse::runtime
