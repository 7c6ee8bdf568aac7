#pragma once
// A claim's lease (docs/cluster.md): its length is configuration
// (lease_seconds); its default and bounds live here, and only here, for the
// configuration, the queue's options and the documentation's table alike.

namespace zkfarm::supervisor {

/// A lease's length when the configuration names none: long enough that a
/// renewal every third of it survives a slow database, short enough that a
/// dead host's partitions go back within a minute.
inline constexpr unsigned kDefaultLeaseSeconds = 30;
/// The bounds of lease_seconds: below 3 s a renewal every second could not
/// keep up; above an hour a dead host's work waits too long.
inline constexpr unsigned kMinLeaseSeconds = 3, kMaxLeaseSeconds = 3600;

}  // namespace zkfarm::supervisor
