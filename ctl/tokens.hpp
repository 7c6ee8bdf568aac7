#pragma once
// The operator's verbs for zkfarm-api's tenants (docs/api.md): `token add`,
// `token revoke`, `token list`, `tenant set`. They write zkfarm-api's store
// (API_DIR/api.sqlite) directly, so only who may write that folder (root,
// zkfarm-api's user) can make or revoke tokens; no network is involved.
#include <cstdint>
#include <optional>
#include <string>

namespace zkfarm::ctl {

/// `token add TENANT --role ROLE [--out FILE]`: makes a token; prints it on
/// stdout (or writes it to a new FILE, mode 0600, never through a symlink)
/// once: only its hash is kept. Exit 0, 1 on a store fault, 2 for a bad role or tenant.
int run_token_add(const std::string& api_dir, const std::string& tenant, const std::string& role, const std::string& out);
/// `token revoke ID`: the token stops working at once. Exit 1 if no such live token.
int run_token_revoke(const std::string& api_dir, const std::string& id);
/// `token list [--json]`: id, tenant, role, created, revoked; never secrets.
int run_token_list(const std::string& api_dir, bool json);
/// `tenant set TENANT [--max-queued-partitions N] [--max-stored-bytes B]`.
int run_tenant_set(const std::string& api_dir, const std::string& tenant, std::optional<uint64_t> max_queued,
                   std::optional<uint64_t> max_stored);

}  // namespace zkfarm::ctl
