// Reading a whole regular file for the file-format parsers (.npy, safetensors): the file must be a regular file
// (not a device or a pipe, which could be endless), and nothing is allocated beyond its size. Checking up front
// that an output can be written where it is asked for. No Kokkos here.
#pragma once

#include "error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace ktr {

/// Bytes of host memory available now (MemAvailable in /proc/meminfo); -1 if unknown.
inline std::int64_t host_memory_available() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
  std::fclose(f);
  return kib < 0 ? -1 : std::int64_t(kib) * 1024;
}

/// The bytes of the regular file at `path`; throws ktr::Error("<path>: <reason>") otherwise, and for a file larger
/// than the host memory available (a sparse file of terabytes is refused by name, before a byte is read).
inline std::string read_regular_file(std::string const& path) {
  struct stat st {};
  KTR_REQUIRE(::stat(path.c_str(), &st) == 0, path, std::string("cannot open (") + std::strerror(errno) + ")");
  KTR_REQUIRE(S_ISREG(st.st_mode), path, "not a regular file");
  std::int64_t const room = host_memory_available();
  KTR_REQUIRE(room < 0 || std::int64_t(st.st_size) <= room, path,
              std::to_string(std::int64_t(st.st_size)) + " bytes, more than the host memory available (" +
                  std::to_string(room) + ")");
  std::ifstream in(path, std::ios::binary);
  KTR_REQUIRE(in.good(), path, std::string("cannot open (") + std::strerror(errno) + ")");
  std::string bytes(std::size_t(st.st_size), '\0');
  in.read(&bytes[0], std::streamsize(bytes.size()));
  bytes.resize(std::size_t(in.gcount()));
  return bytes;
}

namespace impl {

/// Fault injection for tests: how many more write steps (write_atomically's create, write, flush and rename, and
/// the checkpoint directory's own) succeed before one fails as a full disk would; -1, the default: none fails. A
/// test counts an operation's steps with a large value, then fails each step in turn.
inline std::atomic<std::int64_t>& write_steps_left() {
  static std::atomic<std::int64_t> left{-1};
  return left;
}

/// True for the step that is to fail (write_steps_left() reached 0); that disarms the hook.
inline bool write_step_fails() {
  std::atomic<std::int64_t>& left = write_steps_left();
  std::int64_t n = left.load();
  while (n >= 0 && !left.compare_exchange_weak(n, n - 1)) {
  }
  return n == 0;
}

/// The permissions a plain create gives a file now: 0666 less the process's umask (read from /proc: umask(2)
/// itself would change it for every thread while it is read).
inline mode_t created_file_mode() {
  unsigned mask = 022;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[128];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
    std::fclose(f);
  }
  return mode_t(0666 & ~mask);
}

/// Flushes the folder that holds `path` to the disk (a rename or a new file in it survives a power cut).
inline void sync_folder_of(std::string const& path) {
  std::size_t const slash = path.find_last_of('/');
  std::string const folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int const fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool const ok = fd >= 0 && ::fsync(fd) == 0;
  int const err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) throw Error(path + ": cannot flush the folder " + folder + " to the disk (" + std::strerror(err) + ")");
}

}  // namespace impl

/// Writes `bytes` to `path` all or nothing, whatever happens meanwhile (a full disk, a kill, a power cut): into a
/// new temporary file in the same folder, created exclusively under an unpredictable name ("<path>.tmp.XXXXXX":
/// never opened through a link, never a file another writer left), flushed to the disk, renamed to `path`, and the
/// folder flushed. Readers see the old file or the whole new one, never a part; the temporary is removed if a step
/// fails. Throws ktr::Error("<path>: <step> failed (<reason>)").
inline void write_atomically(std::string const& path, std::string const& bytes) {
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = impl::write_step_fails() ? (errno = ENOSPC, -1) : ::mkostemp(&tmp[0], O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot create a temporary file beside it (" + std::strerror(errno) + ")");
  auto fail = [&](char const* step, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(path + ": " + step + " failed (" + std::strerror(err) + ")");
  };
  if (::fchmod(fd, impl::created_file_mode()) != 0) fail("chmod", errno);
  for (std::size_t written = 0; written < bytes.size();) {
    std::size_t const want = bytes.size() - written;
    if (impl::write_step_fails()) {  // a disk that fills halfway through
      ssize_t const half = ::write(fd, bytes.data() + written, want / 2);
      static_cast<void>(half);
      fail("write", ENOSPC);
    }
    ssize_t const n = ::write(fd, bytes.data() + written, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", n < 0 ? errno : ENOSPC);
    written += std::size_t(n);
  }
  if (impl::write_step_fails()) fail("flush", EIO);
  if (::fsync(fd) != 0) fail("flush", errno);
  int const closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("close", errno);
  if (impl::write_step_fails()) fail("rename", EIO);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno);
  impl::sync_folder_of(path);
}

/// Opens the log `path` for writing, created if missing (appending, or emptied when `truncate`), never through a
/// symbolic link and only if it is a regular file: a link or a fifo planted where a log goes is refused, not
/// written through. Returns the descriptor; throws ktr::Error("<what> <path>: <reason>").
inline int open_log(std::string const& path, bool truncate, std::string const& what = "") {
  std::string const where = what.empty() ? path : what + " " + path;
  int const fd =
      ::open(path.c_str(),
             O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (truncate ? O_TRUNC : O_APPEND), 0644);
  if (fd < 0) {
    int const err = errno;
    throw Error(
        where + ": cannot write to it (" +
        (err == ELOOP ? std::string("a symbolic link: ktr never writes through one") : std::strerror(err)) + ")");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(where + ": not a regular file; refusing to write to it");
  }
  return fd;
}

/// Appends `line` (and a newline) to the log `path`, created if missing, in one write: lines of concurrent writers
/// never interleave; never through a link (open_log). Throws ktr::Error("<path>: <reason>").
inline void append_line(std::string const& path, std::string const& line) {
  std::string const bytes = line + "\n";
  int const fd = open_log(path, false);
  ssize_t const n = ::write(fd, bytes.data(), bytes.size());
  int const err = errno;
  ::close(fd);
  if (n != ssize_t(bytes.size()))
    throw Error(path + ": write failed (" + (n < 0 ? std::strerror(err) : "short write") + ")");
}

/// Throws ktr::Error("<what> <path>: <reason>") unless a file can be written at `path` the way ktr writes files (a
/// temporary name in the same folder, renamed into place): `path` is not a folder, and a file can be created in
/// its folder (which exists, is a folder, is writable and not on a read-only file system). Creates and removes a
/// probe file "<path>.tmp.<pid>"; leaves an existing file at `path` alone (whether it may be replaced is the
/// writer's check).
inline void check_output_path(std::string const& path, std::string const& what) {
  std::string const where = what + " " + path;
  KTR_REQUIRE(!path.empty() && path.back() != '/', where, "names a folder, not a file");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) KTR_REQUIRE(!S_ISDIR(st.st_mode), where, "is a folder, not a file");
  std::string const probe = path + ".tmp." + std::to_string(::getpid());
  int const fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int const err = errno;
    std::size_t const slash = path.find_last_of('/');
    std::string const folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    throw Error(where + ": cannot write a file there (" + std::strerror(err) +
                (err == ENOENT || err == ENOTDIR ? ": the folder " + folder + " does not exist" : std::string()) +
                ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace ktr
