//===- Plan.cpp - serialisation of plans ----------------------------------===//
//
// Format: a header line, then one line per buffer, launch and copy, then
// length-prefixed blobs. Every count and length is checked on reading, so a
// truncated or corrupted file is rejected rather than half-read.
//
//===----------------------------------------------------------------------===//

#include "runtime/Plan.h"

#include <charconv>
#include <sstream>

namespace kfuse::runtime {

size_t Plan::count(BufferRole role) const {
  size_t n = 0;
  for (const BufferDesc &b : buffers)
    n += b.role == role;
  return n;
}

bool Plan::hasExtents() const {
  for (const LaunchDesc &l : launches)
    if (!l.extents.empty())
      return true;
  return false;
}

bool Plan::allowsInPlace(uint32_t input, uint32_t output) const {
  for (const InPlaceDesc &pair : inPlace)
    if (pair.input == input && pair.output == output)
      return true;
  return false;
}

static void blob(std::ostringstream &os, const std::string &name,
                 const std::string &data) {
  os << "blob " << name << " " << data.size() << "\n" << data << "\n";
}

std::string Plan::serialize(bool withDumps) const {
  std::ostringstream os;
  os << "kfuse-plan 6\n";
  os << "buffers " << buffers.size() << "\n";
  for (const BufferDesc &b : buffers) {
    os << "b " << int(b.role) << " " << b.index << " " << dtypeName(b.dtype)
       << " " << b.bytes << " " << b.shape.size();
    for (int64_t d : b.shape)
      os << " " << d;
    os << "\n";
  }
  os << "launches " << launches.size() << "\n";
  for (const LaunchDesc &l : launches) {
    os << "l " << l.kernel << " " << l.grid << " " << l.block << " "
       << l.sharedBytes << " " << l.flops << " " << l.buffers.size();
    for (uint32_t b : l.buffers)
      os << " " << b;
    os << " " << l.extents.size();
    for (const ExtentDesc &e : l.extents)
      os << " " << e.buffer << " " << e.dim;
    os << " " << l.tensorMaps.size() << "\n";
    for (const TensorMapDesc &m : l.tensorMaps) {
      os << "m " << m.buffer << " " << m.rank << " " << m.rowsExtent;
      for (uint32_t d = 0; d < m.rank; ++d)
        os << " " << m.dims[d] << " " << m.box[d];
      for (uint32_t d = 1; d < m.rank; ++d)
        os << " " << m.strides[d - 1];
      os << "\n";
    }
  }
  os << "zeroes " << zeroes.size() << "\n";
  for (const ZeroDesc &z : zeroes)
    os << "z " << z.launch << " " << z.buffer << "\n";
  os << "copies " << copies.size() << "\n";
  for (const CopyDesc &c : copies)
    os << "c " << c.dst << " " << c.src << "\n";
  os << "in-place " << inPlace.size() << "\n";
  for (const InPlaceDesc &pair : inPlace)
    os << "i " << pair.input << " " << pair.output << "\n";
  blob(os, "ptx", ptx);
  blob(os, "cubin", cubin);
  blob(os, "ptxas", ptxasLog);
  os << "dumps " << (withDumps ? dumps.size() : 0) << "\n";
  if (withDumps) // without, the map is not touched (filled concurrently)
    for (const auto &[stage, text] : dumps)
      blob(os, stage, text);
  os << "end\n";
  return os.str();
}

namespace {

/// A cursor over the text that fails (and stays failed) on any mismatch.
class Reader {
public:
  explicit Reader(std::string_view text) : rest(text) {}
  bool ok() const { return good; }
  bool atEnd() const { return rest.empty(); }

  std::string_view word() {
    size_t start = rest.find_first_not_of(' ');
    if (!good || start == std::string_view::npos || rest[start] == '\n')
      return fail();
    rest.remove_prefix(start);
    size_t end = rest.find_first_of(" \n");
    std::string_view w = rest.substr(0, end);
    rest.remove_prefix(w.size());
    return w;
  }
  template <typename T> T number() {
    std::string_view w = word();
    T value{};
    auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
    if (ec != std::errc() || ptr != w.data() + w.size())
      fail();
    return value;
  }
  void expect(std::string_view keyword) {
    if (word() != keyword)
      fail();
  }
  void endLine() {
    if (!good || rest.empty() || rest[0] != '\n') {
      fail();
      return;
    }
    rest.remove_prefix(1);
  }
  /// "blob NAME SIZE\nDATA\n"; the name must be `expected` unless that
  /// is empty, and is returned through `name`.
  std::string blob(std::string_view expected, std::string *name = nullptr) {
    expect("blob");
    std::string_view actual = word();
    if (!expected.empty() && actual != expected)
      fail();
    if (name)
      *name = std::string(actual);
    size_t size = number<size_t>();
    endLine();
    if (!good || rest.size() < size + 1 || rest[size] != '\n') {
      fail();
      return {};
    }
    std::string data(rest.substr(0, size));
    rest.remove_prefix(size + 1);
    return data;
  }
  /// Counts are bounded by what the remaining text could hold.
  size_t count() {
    size_t n = number<size_t>();
    if (n > rest.size())
      fail();
    return good ? n : 0;
  }

private:
  std::string_view fail() {
    good = false;
    return {};
  }
  std::string_view rest;
  bool good = true;
};

/// "m BUFFER RANK ROWS-EXTENT (DIM BOX)... STRIDE...": a rank of 1 to 3,
/// boxes of 1 to 256 elements (what the TMA takes), rows from one of the
/// launch's `extents` or -1.
std::optional<TensorMapDesc> readTensorMap(Reader &r, size_t numBuffers,
                                           size_t extents) {
  TensorMapDesc m;
  r.expect("m");
  m.buffer = r.number<uint32_t>();
  m.rank = r.number<uint32_t>();
  m.rowsExtent = r.number<int32_t>();
  if (!r.ok() || m.buffer >= numBuffers || m.rank < 1 || m.rank > 3 ||
      m.rowsExtent < -1 || m.rowsExtent >= int64_t(extents) ||
      (m.rowsExtent >= 0 && m.rank != 3))
    return std::nullopt;
  for (uint32_t d = 0; d < m.rank; ++d) {
    m.dims[d] = r.number<uint64_t>();
    m.box[d] = r.number<uint32_t>();
    if (m.box[d] < 1 || m.box[d] > 256)
      return std::nullopt;
  }
  for (uint32_t d = 1; d < m.rank; ++d)
    m.strides[d - 1] = r.number<uint64_t>();
  r.endLine();
  if (!r.ok())
    return std::nullopt;
  return m;
}

/// "b ROLE INDEX DTYPE BYTES RANK DIM...".
std::optional<BufferDesc> readBuffer(Reader &r) {
  BufferDesc b;
  r.expect("b");
  int role = r.number<int>();
  b.role = static_cast<BufferRole>(role);
  b.index = r.number<uint32_t>();
  std::optional<DType> dtype = parseDType(r.word());
  b.bytes = r.number<uint64_t>();
  size_t rank = r.count();
  for (size_t d = 0; d < rank && r.ok(); ++d)
    b.shape.push_back(r.number<int64_t>());
  r.endLine();
  if (!r.ok() || !dtype || role < 0 || role > 2)
    return std::nullopt;
  b.dtype = *dtype;
  return b;
}

/// "l KERNEL GRID BLOCK SHARED FLOPS ARGS BUFFER... EXTENTS (BUFFER DIM)...
/// MAPS", then the launch's tensor maps a line each. An extent names a dim
/// of an input.
std::optional<LaunchDesc> readLaunch(Reader &r,
                                     const std::vector<BufferDesc> &buffers) {
  size_t numBuffers = buffers.size();
  LaunchDesc l;
  r.expect("l");
  l.kernel = std::string(r.word());
  l.grid = r.number<uint32_t>();
  l.block = r.number<uint32_t>();
  l.sharedBytes = r.number<uint32_t>();
  l.flops = r.number<uint64_t>();
  size_t args = r.count();
  for (size_t a = 0; a < args && r.ok(); ++a) {
    uint32_t buffer = r.number<uint32_t>();
    if (buffer >= numBuffers)
      return std::nullopt;
    l.buffers.push_back(buffer);
  }
  size_t extents = r.count();
  for (size_t e = 0; e < extents && r.ok(); ++e) {
    ExtentDesc extent{r.number<uint32_t>(), r.number<uint32_t>()};
    if (extent.buffer >= numBuffers ||
        buffers[extent.buffer].role != BufferRole::Input ||
        extent.dim >= buffers[extent.buffer].shape.size())
      return std::nullopt;
    l.extents.push_back(extent);
  }
  size_t maps = r.count();
  r.endLine();
  for (size_t m = 0; m < maps && r.ok(); ++m)
    if (std::optional<TensorMapDesc> map =
            readTensorMap(r, numBuffers, l.extents.size()))
      l.tensorMaps.push_back(*map);
    else
      return std::nullopt;
  if (!r.ok())
    return std::nullopt;
  return l;
}

} // namespace

/// A counted list of buffer index pairs: `heading N`, then N lines
/// `tag A B`; nothing if an index is past `numBuffers`.
static std::optional<std::vector<std::pair<uint32_t, uint32_t>>>
readBufferPairs(Reader &r, const char *heading, const char *tag,
                size_t numBuffers) {
  r.expect(heading);
  size_t count = r.count();
  r.endLine();
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (size_t i = 0; i < count && r.ok(); ++i) {
    r.expect(tag);
    uint32_t a = r.number<uint32_t>(), b = r.number<uint32_t>();
    r.endLine();
    if (a >= numBuffers || b >= numBuffers)
      return std::nullopt;
    pairs.push_back({a, b});
  }
  return pairs;
}

// A failed read leaves `r` failed and ends every loop: the plan is then
// refused at the end, if not before.
std::optional<Plan> Plan::deserialize(std::string_view text) {
  Reader r(text);
  Plan plan;
  r.expect("kfuse-plan");
  r.expect("6");
  r.endLine();
  r.expect("buffers");
  size_t numBuffers = r.count();
  r.endLine();
  for (size_t i = 0; i < numBuffers && r.ok(); ++i) {
    std::optional<BufferDesc> b = readBuffer(r);
    if (!b)
      return std::nullopt;
    plan.buffers.push_back(std::move(*b));
  }
  r.expect("launches");
  size_t numLaunches = r.count();
  r.endLine();
  for (size_t i = 0; i < numLaunches && r.ok(); ++i) {
    std::optional<LaunchDesc> l = readLaunch(r, plan.buffers);
    if (!l)
      return std::nullopt;
    plan.launches.push_back(std::move(*l));
  }
  // (Bounded by both counts here; each field by its own below.)
  auto zeroes = readBufferPairs(r, "zeroes", "z",
                                std::max(numBuffers, plan.launches.size()));
  if (!zeroes)
    return std::nullopt;
  for (auto [launch, buffer] : *zeroes) {
    if (launch >= plan.launches.size() || buffer >= numBuffers)
      return std::nullopt;
    plan.zeroes.push_back({launch, buffer});
  }
  auto copies = readBufferPairs(r, "copies", "c", numBuffers);
  auto inPlace = readBufferPairs(r, "in-place", "i", numBuffers);
  if (!copies || !inPlace)
    return std::nullopt;
  for (auto [dst, src] : *copies)
    plan.copies.push_back({dst, src});
  for (auto [input, output] : *inPlace)
    plan.inPlace.push_back({input, output});
  plan.ptx = r.blob("ptx");
  plan.cubin = r.blob("cubin");
  plan.ptxasLog = r.blob("ptxas");
  r.expect("dumps");
  size_t numDumps = r.count();
  r.endLine();
  for (size_t i = 0; i < numDumps && r.ok(); ++i) {
    std::string stage;
    std::string data = r.blob("", &stage);
    plan.dumps[stage] = std::move(data);
  }
  r.expect("end");
  r.endLine();
  if (!r.ok() || !r.atEnd())
    return std::nullopt;
  return plan;
}

} // namespace kfuse::runtime
