// Uploads and circuits (docs/api.md): an upload is a file the tenant sent
// (a zkey, a circuit's wasm, a witness), streamed to API_DIR/uploads/ID by
// the server and counted against the tenant's stored-bytes quota; a circuit
// names a zkey upload and, for jobs of inputs, a wasm upload, registered with
// zkfarmd as "TENANT.NAME" so that tenants never share a name.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "protocol/control_requests.hpp"
#include "api/call.hpp"
#include "api/service.hpp"
#include "supervisor/clock.hpp"
#include "protocol/control_verbs.hpp"

namespace zkfarm::api {

namespace {

using supervisor::wall_ms;

json upload_view(const UploadRow& u) {
  return {{"id", u.id}, {"bytes", u.bytes}, {"sha256", u.sha256}, {"created_ms", u.created_ms}};
}

json circuit_view(const CircuitRow& c) {
  json info = json::parse(c.info_json, nullptr, false);
  if (!info.is_object()) info = json::object();
  json v = {{"name", c.name},
            {"zkey", c.zkey_upload},
            {"wasm", c.wasm_upload.empty() ? json(nullptr) : json(c.wasm_upload)},
            {"inputs", !c.farm_name.empty()},
            {"created_ms", c.created_ms}};
  // witness: how zkfarmd makes this circuit's witnesses, and why not the
  // graph when it is not ("wasm (built from a wasm: …)", docs/witness.md).
  for (const char* k : {"kind", "witness", "generator", "zkey_sha256", "n_vars", "n_public"})
    if (info.contains(k)) v[k] = info[k];
  return v;
}

// zkfarmd's witness line as a tenant sees it: the engine, and its reason
// only where the reason names no path (a graph's refusal can quote a
// compiler's output or a host path; a wasm circuit's reason is fixed text).
std::string tenant_witness_line(const std::string& line) {
  const size_t open = line.find(" (");
  if (open == std::string::npos || line.find('/') == std::string::npos) return line.substr(0, 512);
  return line.substr(0, open) + " (the farm's log says why)";
}

}  // namespace

Response Service::upload_create(Call& c, Request& req) {
  UploadRow u;
  u.id = random_hex(16);
  u.tenant = c.who.tenant;
  u.bytes = req.upload_bytes;
  u.sha256 = req.upload_sha256;
  u.created_ms = wall_ms();
  const std::string dest = upload_path(u.id);
  // Durable before it is recorded (the server closed it without a sync).
  const int fd = ::open(req.upload_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(req.upload_path + ": cannot sync the upload: " + std::strerror(err));
  }
  ::close(fd);
  if (::rename(req.upload_path.c_str(), dest.c_str()) != 0)
    throw std::runtime_error(dest + ": cannot keep the upload: " + std::strerror(errno));
  req.upload_path.clear();
  try {
    store_.add_upload(u);
  } catch (...) {
    ::unlink(dest.c_str());
    throw;
  }
  Response r = json_reply(201, {{"upload", upload_view(u)}});
  r.headers.emplace_back("Location", "/v1/uploads/" + u.id);
  return r;
}

Response Service::upload_list(Call& c) {
  json list = json::array();
  for (const auto& u : store_.uploads(c.who.tenant)) list.push_back(upload_view(u));
  return json_reply(200, {{"uploads", list}, {"stored_bytes", store_.stored_bytes(c.who.tenant)},
                          {"max_stored_bytes", max_stored(c.who.tenant)}});
}

Response Service::upload_get(Call& c) {
  auto u = store_.upload(c.who.tenant, c.id);
  if (!u) throw ApiError{404, "not_found", "no upload '" + c.id + "'"};
  return json_reply(200, {{"upload", upload_view(*u)}});
}

Response Service::upload_delete(Call& c) {
  if (!store_.upload(c.who.tenant, c.id)) throw ApiError{404, "not_found", "no upload '" + c.id + "'"};
  if (!store_.remove_upload(c.who.tenant, c.id))
    throw ApiError{409, "conflict", "upload '" + c.id + "' is used by a circuit: delete the circuit first"};
  ::unlink(upload_path(c.id).c_str());
  return json_reply(200, {{"deleted", c.id}});
}

Response Service::circuit_create(Call& c, const Request& req) {
  const json body = parse_body(req.body);
  for (const auto& [k, v] : body.items()) {
    if (k != "name" && k != "zkey" && k != "wasm") throw ApiError{400, "unknown_field", "unknown field '" + k.substr(0, 64) + "'"};
    if (!v.is_string()) throw ApiError{400, "bad_request", "'" + k + "' must be a string"};
  }
  const std::string name = body.value("name", ""), zkey = body.value("zkey", ""), wasm = body.value("wasm", "");
  if (!valid_circuit_name(name)) throw ApiError{400, "bad_request", "'name' must be 1-31 of letters, digits, '.', '_', '-'"};
  if (zkey.empty() || !store_.upload(c.who.tenant, zkey)) throw ApiError{404, "not_found", "'zkey': no such upload"};
  if (!wasm.empty() && !store_.upload(c.who.tenant, wasm)) throw ApiError{404, "not_found", "'wasm': no such upload"};
  std::lock_guard<std::mutex> tenant(tenant_lock(c.who.tenant));
  if (store_.circuit(c.who.tenant, name)) throw ApiError{409, "conflict", "circuit '" + name + "' exists: delete it first"};
  CircuitRow row;
  row.tenant = c.who.tenant;
  row.name = name;
  row.zkey_upload = zkey;
  row.wasm_upload = wasm;
  row.created_ms = wall_ms();
  json info = {{"kind", "witnesses"}};
  if (!wasm.empty()) {
    // zkfarmd builds the generator once and checks it against the key.
    row.farm_name = c.who.tenant + "." + name;
    protocol::CircuitAdd add;
    add.name = row.farm_name;
    add.zkey = upload_path(zkey);
    add.wasm = upload_path(wasm);
    add.submitter = c.who.tenant;  // zkfarmd's build slot is per tenant, not per zkfarm-api
    // zkfarm-api is an admin to zkfarmd: a name a local user holds would be
    // replaced, so such a name is refused here instead.
    for (const auto& fc : farm_.call(protocol::make(protocol::Verb::kCircuitList)).value("circuits", json::array()))
      if (fc.value("name", "") == row.farm_name && fc.value("owner_uid", uint64_t(::getuid())) != uint64_t(::getuid()))
        throw ApiError{409, "conflict", "circuit '" + name + "': the farm has another owner's circuit of that name"};
    json reply;
    try {
      reply = farm_.call(protocol::to_message(add), 35 * 60 * 1000);
    } catch (const FarmRefused& e) {
      throw ApiError{400, "rejected", tenant_text(e.what())};
    }
    const json fc = reply.value("circuit", json::object());
    info = {{"kind", fc.value("kind", "wasm")}};
    // generator: the SHA-256 of the built witness generator (zkfarmd's circuit object).
    for (const char* k : {"generator", "zkey_sha256", "n_vars", "n_public"})
      if (fc.contains(k)) info[k] = fc[k];
    if (fc.contains("witness") && fc["witness"].is_string())
      info["witness"] = tenant_witness_line(fc["witness"].get<std::string>());
  }
  row.info_json = info.dump();
  if (!store_.add_circuit(row)) throw ApiError{409, "conflict", "circuit '" + name + "' exists"};
  if (opts_.log) opts_.log("circuit " + name + " added by tenant " + c.who.tenant);
  Response r = json_reply(201, {{"circuit", circuit_view(row)}});
  r.headers.emplace_back("Location", "/v1/circuits/" + name);
  return r;
}

Response Service::circuit_list(Call& c) {
  json list = json::array();
  for (const auto& row : store_.circuits(c.who.tenant)) list.push_back(circuit_view(row));
  return json_reply(200, {{"circuits", list}});
}

Response Service::circuit_get(Call& c) {
  auto row = store_.circuit(c.who.tenant, c.id);
  if (!row) throw ApiError{404, "not_found", "no circuit '" + c.id + "'"};
  return json_reply(200, {{"circuit", circuit_view(*row)}});
}

Response Service::circuit_delete(Call& c) {
  std::lock_guard<std::mutex> tenant(tenant_lock(c.who.tenant));
  auto row = store_.circuit(c.who.tenant, c.id);
  if (!row) throw ApiError{404, "not_found", "no circuit '" + c.id + "'"};
  if (!row->farm_name.empty()) {
    try {
      farm_.call(protocol::to_message(protocol::CircuitRemove{row->farm_name}));
    } catch (const FarmRefused&) {
      // Already gone from zkfarmd: nothing to undo there.
    }
  }
  store_.remove_circuit(c.who.tenant, c.id);
  return json_reply(200, {{"deleted", c.id}});
}

}  // namespace zkfarm::api
