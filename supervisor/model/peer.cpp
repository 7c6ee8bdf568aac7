#include "supervisor/model/peer.hpp"

#include "files/fs_credentials.hpp"

#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace zkfarm::supervisor {

namespace {

template <class T>
std::optional<T> number(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<Peer> parse_peer_address(const std::string& text) {
  const size_t c3 = text.rfind(':');
  if (c3 == std::string::npos || c3 == 0) return std::nullopt;
  const size_t c2 = text.rfind(':', c3 - 1);
  if (c2 == std::string::npos || c2 == 0) return std::nullopt;
  const size_t c1 = text.rfind(':', c2 - 1);
  if (c1 == std::string::npos) return std::nullopt;
  auto uid = number<uint32_t>(std::string_view(text).substr(c1 + 1, c2 - c1 - 1));
  auto gid = number<uint32_t>(std::string_view(text).substr(c2 + 1, c3 - c2 - 1));
  auto pid = number<int32_t>(std::string_view(text).substr(c3 + 1));
  if (!uid || !gid || !pid || *pid <= 0) return std::nullopt;
  return Peer{uid_t(*uid), gid_t(*gid), pid_t(*pid)};
}

std::optional<Peer> peer_of(zmq::message_t& msg) {
  try {
    const char* v = msg.gets("Peer-Address");
    if (!v) return std::nullopt;
    return parse_peer_address(v);
  } catch (const zmq::error_t&) {
    return std::nullopt;  // not an ipc:// connection, or no credentials
  }
}

std::optional<gid_t> group_id(const std::string& name) {
  std::vector<char> buf(16384);
  group g{}, *out = nullptr;
  if (getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &out) != 0 || !out) return std::nullopt;
  return out->gr_gid;
}

std::vector<gid_t> groups_of(uid_t uid, gid_t gid) { return files::FsCredentials::supplementary_groups(uid, gid); }

bool member_of(const Peer& peer, const std::string& group) {
  if (group.empty()) return false;
  auto gid = group_id(group);
  if (!gid) return false;
  auto groups = groups_of(peer.uid, peer.gid);
  return std::find(groups.begin(), groups.end(), *gid) != groups.end();
}

Role role_of(const Peer& peer, const std::string& admin_group) {
  if (peer.uid == 0 || peer.uid == ::geteuid()) return Role::kAdmin;
  return member_of(peer, admin_group) ? Role::kAdmin : Role::kUser;
}

}  // namespace zkfarm::supervisor
