//===- DiskCache.cpp - compiled plans on disk -----------------------------===//

#include "runtime/DiskCache.h"
#include "runtime/Debug.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <set>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace kfuse::runtime {

static constexpr std::string_view kMagic = "kfuse-cache 2\n";

/// The checksum line that follows the magic: any flipped or missing byte
/// of the rest (key and plan) changes it. xxh3 is quick enough that a
/// cache hit stays well under a millisecond; the directory is the user's
/// own (0700), so this guards against corruption, not against an attacker.
static std::string checksumLine(std::string_view body) {
  return "xxh3 " + llvm::utohexstr(llvm::xxh3_64bits(body)) + "\n";
}

DiskCache::DiskCache(std::string directory)
    : dir(directory.empty() ? defaultDirectory() : std::move(directory)) {}

std::string DiskCache::defaultDirectory() {
  if (const char *d = std::getenv("KFUSE_CACHE_DIR"); d && *d)
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/kfuse";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kfuse";
  return "/tmp/kfuse-cache-" + std::to_string(getuid());
}

std::string DiskCache::digest(const std::string &key) {
  auto hash = llvm::SHA256::hash(llvm::arrayRefFromStringRef(key));
  static const char *hex = "0123456789abcdef";
  std::string name;
  for (uint8_t byte : hash) {
    name += hex[byte >> 4];
    name += hex[byte & 15];
  }
  return name;
}

std::string DiskCache::pathFor(const std::string &key) const {
  return dir + "/" + digest(key) + ".kfc";
}

std::optional<Plan> DiskCache::load(const std::string &key,
                                    bool *rejected) const {
  if (rejected)
    *rejected = false;
  std::string path = pathFor(key);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  std::string_view rest(text);
  auto reject = [&](const char *why) -> std::optional<Plan> {
    debugLog("cache entry " + path + " " + why + "; ignored");
    if (rejected)
      *rejected = true;
    return std::nullopt;
  };
  if (rest.substr(0, kMagic.size()) != kMagic)
    return reject("is from another kfuse or not a cache entry");
  rest.remove_prefix(kMagic.size());
  size_t newline = rest.find('\n');
  if (newline == std::string_view::npos ||
      rest.substr(0, newline + 1) != checksumLine(rest.substr(newline + 1)))
    return reject("fails its checksum (truncated or corrupt)");
  rest.remove_prefix(newline + 1);
  std::string header =
      "key " + std::to_string(key.size()) + "\n" + key + "\n";
  if (rest.substr(0, header.size()) != header)
    return reject("is for another key");
  std::optional<Plan> plan = Plan::deserialize(rest.substr(header.size()));
  if (!plan)
    return reject("does not hold a plan");
  return plan;
}

static Status ioError(const std::string &what) {
  return Error(ErrorCode::IOError, what + ": " + std::strerror(errno));
}

/// Temporary files of writers that died before renaming them (a killed
/// process) are never read, but would stay forever: the first store of a
/// process into a directory removes those older than ten minutes (no live
/// writer takes that long).
static void sweepAbandonedWrites(const std::string &dir) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!swept.insert(dir).second)
      return;
  }
  DIR *d = opendir(dir.c_str());
  if (!d)
    return;
  time_t cutoff = time(nullptr) - 600;
  while (dirent *entry = readdir(d)) {
    std::string name = entry->d_name;
    struct stat st;
    std::string path = dir + "/" + name;
    if (name.find(".kfc.tmp.") != std::string::npos &&
        stat(path.c_str(), &st) == 0 && st.st_mtime < cutoff)
      ::unlink(path.c_str());
  }
  closedir(d);
}

Status DiskCache::store(const std::string &key, const Plan &plan) const {
  // Create each missing level; the last with 0700 (kernels and the graphs
  // they came from are the user's business).
  for (size_t slash = dir.find('/', 1); ; slash = dir.find('/', slash + 1)) {
    std::string level = dir.substr(0, slash);
    bool last = slash == std::string::npos;
    if (mkdir(level.c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST)
      return ioError("cannot create the cache directory " + level);
    if (last)
      break;
  }
  sweepAbandonedWrites(dir);
  std::string path = pathFor(key);
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return ioError("cannot write " + tmp);
  std::string body =
      "key " + std::to_string(key.size()) + "\n" + key + "\n" + plan.serialize();
  std::string text = std::string(kMagic) + checksumLine(body) + body;
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Status s = ioError("cannot write " + tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    written += n;
  }
  // No fsync: a torn file after a crash fails the load checks and is
  // replaced, and compiles stay fast.
  if (::close(fd) != 0) {
    Status s = ioError("cannot write " + tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ioError("cannot rename " + tmp + " to " + path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::ok();
}

} // namespace kfuse::runtime
