#pragma once
// The shared-memory arena, through which partitions move between synthesis and
// GPU workers. The supervisor creates it and owns all allocation (slots.hpp);
// workers attach and use the byte ranges a message names.
//
// Two kinds:
// - memfd (what zkfarmd uses): an anonymous memfd_create segment, sealed
//   against shrinking and growing. zkfarmd keeps the descriptor and hands a
//   copy to each worker it starts (as fd 3, `--arena fd:3`); a worker maps it
//   and closes its copy. The segment has no name anywhere, so nothing else on
//   the host can open it by name, and the kernel frees its memory when the
//   last process holding the descriptor or a mapping exits, whatever ended
//   them (docs/decisions.md, "An arena that cannot outlive its farm").
// - named: a POSIX shared-memory segment /dev/shm/NAME, mode 0600, for tests
//   and tools; it lives until Arena::remove (zkfarmd still removes one of its
//   state dir left by an older version at start).
//
// Layout: a header page {magic "ZKFARENA", layout version, header bytes, total
// bytes, creator pid}, then the slot space. Attaching to a segment with another
// magic or layout version is refused.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace zkfarm::shm {

/// Increment whenever the header or slot layout changes. 2: a slot carries the
/// witness only (n_vars·32 bytes); 1 held a, b, c before it. A worker of one
/// version refuses an arena of another at attach (exit 3), so a rolling
/// upgrade across the change stops and keeps the old binaries.
inline constexpr uint32_t kArenaLayoutVersion = 2;
/// Bytes before the slot space (one page, so slots are page-aligned).
inline constexpr uint64_t kArenaHeaderBytes = 4096;
/// The descriptor number a worker finds the memfd arena at (`--arena fd:3`):
/// the first after stdin, stdout and stderr.
inline constexpr int kArenaChildFd = 3;

/// Any fault of creating, attaching or addressing an arena; the text names the
/// segment (/dev/shm/NAME, or the memfd and its descriptor) and the fault.
class ArenaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Arena {
 public:
  /// The named segment of the instance whose state dir is `state_dir`
  /// ("zkfarm-" + 16 hex digits of a hash of its absolute path). zkfarmd
  /// before the memfd arena made this segment; today it only removes it.
  static std::string name_for(const std::string& state_dir);
  /// The memfd's name for the instance of `state_dir` ("zkfarm-arena-" + the
  /// same 16 hex digits). Only a label (it shows in /proc/PID/maps and
  /// /proc/PID/fd as "/memfd:NAME (deleted)"); nothing opens it by it.
  static std::string memfd_name_for(const std::string& state_dir);

  /// Creates the named segment /dev/shm/NAME with `slot_bytes` of slot space
  /// (rounded up to 4 KiB), mode 0600, its pages reserved (posix_fallocate).
  /// Throws ArenaError if it exists or cannot be made (no space in /dev/shm,
  /// permissions).
  static Arena create(const std::string& name, uint64_t slot_bytes);
  /// Creates an anonymous memfd arena labelled `label` with `slot_bytes` of
  /// slot space (rounded up to 4 KiB): memfd_create(MFD_CLOEXEC |
  /// MFD_ALLOW_SEALING, plus MFD_NOEXEC_SEAL where the kernel has it),
  /// ftruncate, every page reserved with posix_fallocate (a machine or memory
  /// cgroup without room is an error now, not a SIGBUS or an OOM kill in a
  /// worker later; an arena larger than MemAvailable or the cgroup's
  /// memory.max is refused before any page is taken), then sealed with
  /// F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL. fd() is the descriptor, close-
  /// on-exec; pass it to workers with kArenaChildFd. Throws ArenaError.
  static Arena create_memfd(const std::string& label, uint64_t slot_bytes);
  /// Attaches an arena by `spec`: "fd:N" (a memfd arena at descriptor N, as
  /// zkfarmd passes it: see attach_fd) or a name (the segment /dev/shm/NAME,
  /// mapped read-write). Checks the header (magic, layout version, sizes).
  /// Throws ArenaError naming the segment and the fault.
  static Arena attach(const std::string& spec);
  /// Attaches the memfd arena at descriptor `fd`, which it takes over: fstat
  /// (a regular file of a whole number of pages, at least the header), the
  /// seals (F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL must be set: no one can
  /// shrink the segment under the mapping and SIGBUS the worker), mmap
  /// MAP_SHARED, the header (magic, layout version, total bytes equal to the
  /// segment's size). `fd` is closed whatever the outcome: the mapping keeps
  /// the memory, and the worker holds no descriptor a child could inherit.
  /// Throws ArenaError naming "fd:N" (and the memfd's label) and the fault.
  static Arena attach_fd(int fd);
  /// Unlinks the named segment /dev/shm/NAME; true if it existed.
  static bool remove(const std::string& name);

  Arena(Arena&&) noexcept;
  Arena& operator=(Arena&&) noexcept;
  ~Arena();

  /// The segment's name: NAME of /dev/shm/NAME, or a memfd's label (what
  /// /proc/PID/maps shows after "/memfd:"); "fd:N" for a memfd attached from
  /// a descriptor whose label could not be read.
  const std::string& name() const { return name_; }
  /// "memfd" or "posix" (a named /dev/shm segment): for status and logs.
  const char* kind() const;
  /// The memfd descriptor the creator holds (close-on-exec), to hand to
  /// workers; -1 for a named arena and for one attached (its descriptor is
  /// closed once mapped).
  int fd() const;
  /// Bytes of slot space (after the header).
  uint64_t capacity() const { return capacity_; }
  /// The slot space's first byte (page-aligned); the whole mapping starts one header before.
  uint8_t* slots() const { return base_ + kArenaHeaderBytes; }
  /// The whole mapping (header included) and its size, e.g. to pin it with cudaHostRegister.
  uint8_t* mapping() const { return base_; }
  uint64_t mapping_bytes() const { return capacity_ + kArenaHeaderBytes; }
  /// slots() + offset, after checking [offset, offset + size) lies in the slot
  /// space; throws ArenaError otherwise (a corrupt or stale message).
  uint8_t* at(uint64_t offset, uint64_t size) const;

 private:
  Arena() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
  uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
};

}  // namespace zkfarm::shm
