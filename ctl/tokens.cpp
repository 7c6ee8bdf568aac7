#include "ctl/tokens.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/store.hpp"
#include "ctl/client.hpp"
#include "ctl/exit_codes.hpp"
#include "ctl/render.hpp"

namespace zkfarm::ctl {

namespace {

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string store_path(const std::string& api_dir) { return api_dir + "/api.sqlite"; }

template <class F>
int with_store(const std::string& api_dir, F f) {
  try {
    api::Store store(store_path(api_dir), /*create=*/false);
    return f(store);
  } catch (const api::StoreError& e) {
    throw CtlError(kExitFailed, e.what());
  }
}

}  // namespace

int run_token_add(const std::string& api_dir, const std::string& tenant, const std::string& role_text,
                  const std::string& out) {
  const auto role = api::parse_role(role_text);
  if (!role) throw CtlError(kExitUsage, "--role " + role_text + ": expected read, submit or operator");
  if (!api::valid_tenant(tenant))
    throw CtlError(kExitUsage, "tenant '" + tenant + "': 1-32 of a-z, 0-9, '_', '-', starting with a letter or digit");
  return with_store(api_dir, [&](api::Store& store) {
    const api::NewToken t = store.add_token(tenant, *role, now_ms());
    if (out.empty()) {
      std::cout << t.text << "\n";
    } else {
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      const std::string line = t.text + "\n";
      if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size()) || ::close(fd) != 0) {
        const int err = errno;
        store.revoke_token(t.id, now_ms());  // a token nobody holds must not stay live
        throw CtlError(kExitFailed, "--out " + out + ": " + std::strerror(err) + " (the token was revoked)");
      }
    }
    std::cerr << "zkfarmctl: token " << t.id << " for tenant " << tenant << " (role " << role_text << ")"
              << (out.empty() ? " printed above" : " written to " + out)
              << "; it is not shown again (revoke with `zkfarmctl token revoke " << t.id << "`)\n";
    return kExitOk;
  });
}

int run_token_revoke(const std::string& api_dir, const std::string& id) {
  return with_store(api_dir, [&](api::Store& store) {
    if (!store.revoke_token(id, now_ms())) {
      std::cerr << "zkfarmctl: no live token " << id << "\n";
      return kExitFailed;
    }
    std::cout << "token " << id << " revoked\n";
    return kExitOk;
  });
}

int run_token_list(const std::string& api_dir, bool json) {
  return with_store(api_dir, [&](api::Store& store) {
    nlohmann::json list = nlohmann::json::array();
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : store.tokens()) {
      list.push_back({{"id", t.id},
                      {"tenant", t.tenant},
                      {"role", api::role_name(t.role)},
                      {"created_ms", t.created_ms},
                      {"revoked_ms", t.revoked_ms ? nlohmann::json(*t.revoked_ms) : nlohmann::json(nullptr)}});
      rows.push_back({t.id, t.tenant, api::role_name(t.role), format_time_ms(t.created_ms),
                      t.revoked_ms ? format_time_ms(*t.revoked_ms) : "-"});
    }
    std::cout << (json ? list.dump(2) + "\n" : rows.empty() ? "no tokens\n" : format_table({"ID", "TENANT", "ROLE", "CREATED", "REVOKED"}, rows));
    return kExitOk;
  });
}

int run_tenant_set(const std::string& api_dir, const std::string& tenant, std::optional<uint64_t> max_queued,
                   std::optional<uint64_t> max_stored) {
  if (!api::valid_tenant(tenant)) throw CtlError(kExitUsage, "tenant '" + tenant + "': not a valid tenant name");
  return with_store(api_dir, [&](api::Store& store) {
    store.set_quotas(tenant, {max_queued, max_stored});
    const api::TenantQuotas q = store.quotas(tenant);
    auto show = [](const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : std::string("the API's default"); };
    std::cout << "tenant " << tenant << ": max queued partitions " << show(q.max_queued_partitions)
              << ", max stored bytes " << show(q.max_stored_bytes) << "\n";
    return kExitOk;
  });
}

}  // namespace zkfarm::ctl
