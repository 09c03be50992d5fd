//===- DiskCache.cpp - compiled plans on disk -----------------------------===//

#include "runtime/DiskCache.h"
#include "runtime/Debug.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <set>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace kfuse::runtime {

static constexpr std::string_view kMagic = "kfuse-cache 2\n";

/// The checksum line that follows the magic: any flipped or missing byte
/// of the rest (key and plan) changes it. xxh3 is quick enough that a
/// cache hit stays well under a millisecond. It guards against corruption,
/// not against an attacker: that is OwnDirectory's job.
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

static Status ioError(const std::string &what) {
  return Error(ErrorCode::IOError, what + ": " + std::strerror(errno));
}

namespace {

/// The cache directory, opened only if it is the user's own: a directory
/// (not a symbolic link) owned by the effective uid, which no group or
/// other user may write. Entries are machine code that kfuse loads and
/// runs, and their checksum is no key: anyone who can write the directory
/// can plant an entry that passes it. The checks are on the open
/// descriptor and entries are opened relative to it, so the directory
/// cannot be swapped between the check and the use.
class OwnDirectory {
public:
  /// Leaves errno as open() left it when the directory is not there.
  static Expected<OwnDirectory> open(const std::string &dir) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      errno = ELOOP;
      return untrusted(dir, "is a symbolic link");
    }
    OwnDirectory d;
    d.fd = ::open(dir.c_str(),
                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d.fd < 0)
      return Error(ErrorCode::IOError, "cannot open the cache directory " +
                                           dir + ": " + std::strerror(errno));
    if (::fstat(d.fd, &st) != 0)
      return ioError("cannot read the cache directory " + dir).error();
    errno = EPERM;
    if (st.st_uid != ::geteuid())
      return untrusted(dir, "is owned by uid " + std::to_string(st.st_uid) +
                                ", not by this user (uid " +
                                std::to_string(::geteuid()) + ")");
    if (st.st_mode & (S_IWGRP | S_IWOTH))
      return untrusted(dir, "is writable by other users (mode " +
                                modeText(st.st_mode) + ")");
    return d;
  }

  OwnDirectory(OwnDirectory &&other) noexcept
      : fd(std::exchange(other.fd, -1)) {}
  ~OwnDirectory() {
    if (fd >= 0)
      ::close(fd);
  }

  /// The whole file `name`, or nothing when it is missing, unreadable or
  /// a symbolic link.
  std::optional<std::string> read(const std::string &name) const {
    int file = ::openat(fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (file < 0)
      return std::nullopt;
    // Read in place into a string of the file's size (one allocation; a
    // file that grows or shrinks meanwhile fails the checksum).
    struct stat st;
    std::string text;
    if (::fstat(file, &st) == 0 && st.st_size > 0)
      text.resize(size_t(st.st_size));
    size_t size = 0;
    for (;;) {
      if (size == text.size())
        text.resize(size + (1 << 16));
      ssize_t n = ::read(file, text.data() + size, text.size() - size);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        ::close(file);
        if (n < 0)
          return std::nullopt;
        text.resize(size);
        return text;
      }
      size += size_t(n);
    }
  }

  /// Writes `text` to a fresh temporary file and renames it to `name`.
  Status writeAtomically(const std::string &name, const std::string &text,
                         const std::string &dir) const;

private:
  OwnDirectory() = default;
  static Error untrusted(const std::string &dir, const std::string &why) {
    return Error(ErrorCode::IOError,
                 "the cache directory " + dir + " " + why +
                     "; kfuse does not trust it and runs without the disk "
                     "cache (set KFUSE_CACHE_DIR to a directory of your own)");
  }
  static std::string modeText(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
    return text;
  }
  int fd = -1;
};

Status OwnDirectory::writeAtomically(const std::string &name,
                                     const std::string &text,
                                     const std::string &dir) const {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = name + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter++);
  std::string where = dir + "/" + tmp;
  int file = ::openat(fd, tmp.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);
  if (file < 0)
    return ioError("cannot write " + where);
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(file, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    written += size_t(n);
  }
  // No fsync: a torn file after a crash fails the load checks and is
  // replaced, and compiles stay fast.
  Status status;
  if (written < text.size() || ::close(file) != 0)
    status = ioError("cannot write " + where);
  else if (::renameat(fd, tmp.c_str(), fd, name.c_str()) != 0)
    status = ioError("cannot rename " + where + " to " + name);
  if (!status)
    ::unlinkat(fd, tmp.c_str(), 0);
  return status;
}

/// An untrusted directory is reported once per process and directory on
/// stderr, whether or not KFUSE_DEBUG is set: the user should know that
/// their compiles are not cached, and why.
void warnOnce(const std::string &dir, const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(dir).second)
      return;
  }
  std::fprintf(stderr, "kfuse: warning: %s\n", message.c_str());
}

} // namespace

std::optional<Plan> DiskCache::load(const std::string &key,
                                    bool *rejected) const {
  if (rejected)
    *rejected = false;
  Expected<OwnDirectory> directory = OwnDirectory::open(dir);
  if (!directory) {
    if (errno != ENOENT) // a missing directory is an empty cache
      warnOnce(dir, directory.error().message());
    return std::nullopt;
  }
  std::string name = digest(key) + ".kfc", path = dir + "/" + name;
  std::optional<std::string> text = directory->read(name);
  if (!text)
    return std::nullopt;
  std::string_view rest(*text);
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
  // An existing directory is used only if it is the user's own: another
  // user may have created it first (a shared /tmp).
  Expected<OwnDirectory> directory = OwnDirectory::open(dir);
  if (!directory) {
    warnOnce(dir, directory.error().message());
    return directory.error();
  }
  sweepAbandonedWrites(dir);
  std::string body =
      "key " + std::to_string(key.size()) + "\n" + key + "\n" +
      plan.serialize(/*withDumps=*/false);
  return directory->writeAtomically(
      digest(key) + ".kfc", std::string(kMagic) + checksumLine(body) + body,
      dir);
}

} // namespace kfuse::runtime
