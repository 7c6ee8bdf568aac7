#pragma once
// Who is on the other end of a control or worker connection, and what they may
// do (docs/security.md). The identity comes from the kernel (SO_PEERCRED at
// connect: read with getsockopt on control.sock's accepted connections, and
// reported by libzmq as the message property "Peer-Address" =
// "HOST:UID:GID:PID" on workers.sock), never from the request itself.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

namespace zkfarm::supervisor {

/// The credentials of a connected process, as the kernel saw them at connect(2).
struct Peer {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
};

/// Parses libzmq's "Peer-Address" of an ipc:// message ("localhost:UID:GID:PID";
/// the host part may itself hold colons, so the last three fields are read).
/// nullopt when the property is absent or malformed (then nothing is allowed).
std::optional<Peer> parse_peer_address(const std::string& text);
/// The sender of a received message (its "Peer-Address" property).
std::optional<Peer> peer_of(zmq::message_t& msg);

/// What a peer may do. kAdmin: root, zkfarmd's own user, members of admin_group:
/// every request. kUser: any other process that could connect to control.sock
/// (members of control_group): submit, and status, jobs, wait, result and
/// cancel of its own jobs.
enum class Role { kUser, kAdmin };

/// The role of `peer`. `admin_group` is a group name or empty. Supplementary
/// groups come from the peer's passwd entry (getgrouplist); a uid without one
/// has only its primary gid.
Role role_of(const Peer& peer, const std::string& admin_group);

/// Whether `peer` belongs to group `group` (a name; empty or unknown: no),
/// by its primary gid or its supplementary groups (groups_of).
bool member_of(const Peer& peer, const std::string& group);

/// The peer's groups: files::FsCredentials::supplementary_groups (getgrouplist
/// for the uid's user name; just {gid} when the uid has no passwd entry).
std::vector<gid_t> groups_of(uid_t uid, gid_t gid);

/// Resolves a group name to its gid; nullopt if there is no such group.
std::optional<gid_t> group_id(const std::string& name);

}  // namespace zkfarm::supervisor
