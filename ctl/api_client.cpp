#include "ctl/api_client.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <httplib.h>

#include "ctl/exit_codes.hpp"
#include "files/file_error.hpp"
#include "files/input_file.hpp"

namespace zkfarm::ctl {

using protocol::Message;

namespace {

// A file the caller named, read whole: regular files only (a FIFO or device
// is refused, never waited on), through one descriptor.
std::string read_text(const std::string& path, struct stat* st_out = nullptr) {
  files::UniqueFd fd;
  try {
    fd = files::open_regular_file(path);
  } catch (const files::FileError& e) {
    throw CtlError(kExitFailed, e.what());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw CtlError(kExitFailed, path + ": cannot stat: " + std::strerror(errno));
  if (st_out) *st_out = st;
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw CtlError(kExitFailed, path + ": cannot read: " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, size_t(n));
  }
}

std::string query_escape(const std::string& s) { return httplib::detail::encode_query_param(s); }

}  // namespace

std::string read_token_file(const std::string& path) {
  struct stat st {};
  std::string text;
  try {
    text = read_text(path, &st);
  } catch (const CtlError& e) {
    throw CtlError(kExitUsage, std::string("--token-file ") + e.what());
  }
  if (st.st_mode & 0044)
    throw CtlError(kExitUsage, "--token-file " + path + ": readable by group or others; chmod 600 " + path);
  const auto nl = text.find_first_of("\r\n");
  if (nl != std::string::npos) text.resize(nl);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
  if (text.empty()) throw CtlError(kExitUsage, "--token-file " + path + ": empty");
  return text;
}

struct ApiClient::Impl {
  std::string url;
  httplib::Client http;
  Impl(const std::string& u, const std::string& token, const std::string& ca) : url(u), http(u) {
    http.set_bearer_token_auth(token.c_str());
    http.enable_server_certificate_verification(true);
    if (!ca.empty()) http.set_ca_cert_path(ca.c_str());
    http.set_connection_timeout(10, 0);
    http.set_write_timeout(300, 0);
    http.set_keep_alive(true);
  }

  // The answer's JSON when 2xx; else Refused with the API's message.
  Message check(const httplib::Result& res, const std::string& what) {
    if (!res) throw NoSupervisor(url, "cannot reach the API: " + httplib::to_string(res.error()));
    Message body = Message::parse(res->body, nullptr, false);
    if (res->status >= 200 && res->status < 300) {
      if (body.is_discarded()) throw MalformedReply(what + ": the API's answer is not JSON");
      return body;
    }
    std::string msg = "HTTP " + std::to_string(res->status);
    if (body.is_object() && body.contains("error") && body["error"].is_object())
      msg = body["error"].value("message", msg) + " (" + body["error"].value("code", std::string("error")) + ", HTTP " +
            std::to_string(res->status) + ")";
    // 503 is transient (a full pool, the farm's queue restarting): worth asking again.
    int64_t retry = 0;
    if (res->status == 503) {
      retry = 1000;
      try {
        if (res->has_header("Retry-After")) retry = std::clamp<int64_t>(std::stoll(res->get_header_value("Retry-After")), 1, 60) * 1000;
      } catch (const std::exception&) {
      }
    }
    throw Refused(msg, retry);
  }

  Message get(const std::string& path, int timeout_ms) {
    set_timeout(timeout_ms);
    return check(http.Get(path.c_str()), "GET " + path);
  }
  Message post_json(const std::string& path, const Message& body, int timeout_ms) {
    set_timeout(timeout_ms);
    return check(http.Post(path.c_str(), body.dump(), "application/json"), "POST " + path);
  }
  /// A POST of no body (the farm's routes refuse one).
  Message post(const std::string& path, int timeout_ms) {
    set_timeout(timeout_ms);
    return check(http.Post(path), "POST " + path);
  }
  Message del(const std::string& path, int timeout_ms) {
    set_timeout(timeout_ms);
    return check(http.Delete(path.c_str()), "DELETE " + path);
  }
  void set_timeout(int ms) { http.set_read_timeout(ms / 1000, (ms % 1000) * 1000); }

  // Streams a local file to POST /v1/uploads; returns the upload's id.
  std::string upload(const std::string& path, int timeout_ms) {
    files::UniqueFd file;
    try {
      file = files::open_regular_file(path);  // no FIFO or device: never blocks
    } catch (const files::FileError& e) {
      throw CtlError(kExitFailed, e.what());
    }
    const int fd = file.get();
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw CtlError(kExitFailed, path + ": cannot stat: " + std::strerror(errno));
    set_timeout(timeout_ms);
    bool read_error = false;
    auto res = http.Post(
        "/v1/uploads", size_t(st.st_size),
        [&](size_t offset, size_t length, httplib::DataSink& sink) {
          char buf[65536];
          const ssize_t n = ::pread(fd, buf, std::min(length, sizeof buf), off_t(offset));
          if (n <= 0) {
            read_error = true;
            return false;
          }
          return sink.write(buf, size_t(n));
        },
        "application/octet-stream");
    if (read_error) throw CtlError(kExitFailed, path + ": cannot read (changed while being sent?)");
    Message m = check(res, "upload of " + path);
    if (!m.contains("upload") || !m["upload"].is_object()) throw MalformedReply("upload: no \"upload\"");
    return m["upload"].value("id", std::string());
  }
};

ApiClient::ApiClient(const std::string& url, const std::string& token, const std::string& ca_file, int timeout_ms)
    : timeout_ms_(timeout_ms) {
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0)
    throw CtlError(kExitUsage, "--api " + url + ": expected https://HOST:PORT");
  if (url.rfind("http://", 0) == 0) {
    // The token would cross the network in clear: plain HTTP only to this host.
    const std::string rest = url.substr(7);
    const std::string host = rest.rfind('[', 0) == 0 ? rest.substr(0, rest.find(']') + 1) : rest.substr(0, rest.find_first_of(":/"));
    if (host != "localhost" && host != "[::1]" && host.rfind("127.", 0) != 0)
      throw CtlError(kExitUsage, "--api " + url + ": plain http:// only to this host (the token would travel in clear); use https://");
  }
  // A server that closes mid-upload must fail the call, not kill zkfarmctl
  // (OpenSSL writes with plain write(2), which raises SIGPIPE).
  ::signal(SIGPIPE, SIG_IGN);
  impl_ = std::make_unique<Impl>(url, token, ca_file);
}

ApiClient::~ApiClient() = default;

namespace {

// A refusal of zkfarm-api with the caller's paths where it names what it was
// sent ("input 1.json", "upload ID": `names` maps each to the caller's path).
std::string with_callers_names(std::string text, const std::vector<std::pair<std::string, std::string>>& names) {
  for (auto it = names.rbegin(); it != names.rend(); ++it)
    for (size_t at = text.find(it->first); at != std::string::npos; at = text.find(it->first, at + it->second.size()))
      text.replace(at, it->first.size(), it->second);
  return text;
}

// The API's circuit object in the shape `circuit add|list` print.
Message circuit_from_api(const Message& c) {
  Message m = c;
  m["zkey"] = "upload " + c.value("zkey", std::string());
  m["source"] = c.value("wasm", Message()).is_string() ? "upload " + c["wasm"].get<std::string>() : std::string("-");
  // The generator's hash, as zkfarmd names it (never the key's: zkey_sha256
  // stays its own field); "-" for a circuit of witnesses, or one an older
  // zkfarm-api registered without keeping it.
  m["generator"] = c.value("generator", Message(nullptr));
  // How zkfarmd makes its witnesses (graph, or the generator and why):
  // "-" for a circuit of witnesses or one an older zkfarm-api registered.
  if (c.contains("witness") && c["witness"].is_string()) m["witness"] = c["witness"];
  m["added_ms"] = c.value("created_ms", Message());
  return m;
}

}  // namespace

Message ApiClient::submit(const Message& req, std::vector<std::pair<std::string, std::string>>& names) {
  Impl& a = *impl_;
  const int t = timeout_ms_;
  Message body = Message::object();
  if (req.contains("circuit")) {
    body["circuit"] = protocol::get_str(req, "circuit");
    Message inputs = Message::array(), paths = Message::array();
    for (const auto& p : req.at("inputs")) {
      const std::string path = p.get<std::string>();
      Message in = Message::parse(read_text(path), nullptr, false);
      if (!in.is_object()) throw CtlError(kExitFailed, path + ": not a JSON object (circom's input.json)");
      // zkfarm-api writes the K-th input to K.json and says "input K.json" (api/service.cpp tenant_text).
      names.emplace_back("input " + std::to_string(inputs.size()) + ".json", path);
      inputs.push_back(std::move(in));
      paths.push_back(path);
    }
    body["inputs"] = inputs;
    // Kept by zkfarm-api with the job, so that a failure after the submit
    // (`wait`, another process) names these paths too; left out when a path
    // is past what the API keeps (1024 bytes, no control characters): the
    // errors then say "input K.json" rather than the submit failing.
    auto keepable = [](const Message& p) {
      const std::string& s = p.get_ref<const std::string&>();
      return !s.empty() && s.size() <= 1024 &&
             std::none_of(s.begin(), s.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; });
    };
    if (std::all_of(paths.begin(), paths.end(), keepable)) body["partition_names"] = paths;
  } else {
    const std::string zkey = protocol::get_str(req, "zkey");
    body["zkey"] = a.upload(zkey, std::max(t, 600000));
    names.emplace_back("upload " + body["zkey"].get<std::string>(), zkey);
    Message wtns = Message::array();
    for (const auto& p : req.at("wtns")) {
      wtns.push_back(a.upload(p.get<std::string>(), std::max(t, 600000)));
      names.emplace_back("upload " + wtns.back().get<std::string>(), p.get<std::string>());
    }
    body["witnesses"] = wtns;
  }
  body["priority"] = protocol::find_str(req, "priority").value_or("normal");
  if (auto o = protocol::find_str(req, "out")) body["out"] = *o;
  if (auto k = protocol::find_str(req, "idempotency_key")) body["idempotency_key"] = *k;
  Message reply;
  try {
    reply = a.post_json("/v1/jobs", body, std::max(t, 600000));
  } catch (const Refused& e) {
    // A zkfarm-api from before partition_names refuses the field: the same
    // request without it (its errors then say "input K.json").
    if (!body.contains("partition_names") || std::string(e.what()).find("unknown field 'partition_names'") == std::string::npos) throw;
    body.erase("partition_names");
    reply = a.post_json("/v1/jobs", body, std::max(t, 600000));
  }
  const Message job = reply.value("job", Message::object());
  return {{"ok", true}, {"job", job.value("id", uint64_t(0))}, {"delivery", "client"}, {"delivery_reason", "api"}};
}

Message ApiClient::call(const Message& req) {
  const std::string type = protocol::type_of(req);
  Impl& a = *impl_;
  const int t = timeout_ms_;
  auto id_of = [&](const char* k) { return std::to_string(protocol::get_u64(req, k)); };
  if (type == "job") {
    std::string path = "/v1/jobs/" + id_of("job");
    if (req.contains("wait_ms")) {
      path += "?wait_ms=" + std::to_string(protocol::get_u64(req, "wait_ms"));
      if (auto s = protocol::find_str(req, "seen_state")) path += "&seen_state=" + query_escape(*s);
      if (req.contains("seen_done")) path += "&seen_done=" + std::to_string(protocol::get_u64(req, "seen_done"));
    }
    return a.get(path, t);
  }
  if (type == "jobs") {
    std::string path = "/v1/jobs?limit=" + std::to_string(std::min<uint64_t>(req.contains("limit") ? protocol::get_u64(req, "limit") : 100, 200));
    if (req.contains("before")) path += "&before=" + id_of("before");
    if (auto s = protocol::find_str(req, "state")) path += "&state=" + query_escape(*s);
    Message reply = a.get(path, t);
    if (req.contains("since_ms") && reply.contains("jobs") && reply["jobs"].is_array()) {
      const uint64_t since = protocol::get_u64(req, "since_ms");
      Message kept = Message::array();
      for (auto& j : reply["jobs"])
        if (j.value("submitted_ms", uint64_t(0)) >= since) kept.push_back(j);
      reply["jobs"] = kept;
    }
    return reply;
  }
  if (type == "result") return a.get("/v1/jobs/" + id_of("job") + "/results?from=" + id_of("from"), t);
  if (type == "cancel") {
    a.post_json("/v1/jobs/" + id_of("job") + "/cancel", Message::object(), t);
    return {{"ok", true}};
  }
  if (type == "status") return {{"ok", true}, {"status", a.get("/v1/farm/status", t)}};
  // An operator token's (the API answers 403 to any other).
  if (type == "drain") return a.post("/v1/farm/drain", t);
  if (type == "resume") return a.post("/v1/farm/resume", t);
  if (type == "submit") {
    // zkfarm-api names what it was sent, not the caller's files ("input
    // 0.json", "upload ID"): its refusal is given back with the caller's paths.
    std::vector<std::pair<std::string, std::string>> names;
    try {
      return submit(req, names);
    } catch (const Refused& e) {
      throw Refused(with_callers_names(e.what(), names), e.retry_after_ms);
    }
  }
  if (type == "circuit_add") {
    if (req.contains("c_dir")) throw CtlError(kExitUsage, "circuit add --c is not offered by the API (native code); use --wasm");
    Message body = {{"name", protocol::get_str(req, "name")}};
    const std::string zkey = protocol::get_str(req, "zkey"), wasm = protocol::get_str(req, "wasm");
    body["zkey"] = a.upload(zkey, std::max(t, 600000));
    body["wasm"] = a.upload(wasm, std::max(t, 600000));
    const std::vector<std::pair<std::string, std::string>> names = {
        {"upload " + body["zkey"].get<std::string>(), zkey}, {"upload " + body["wasm"].get<std::string>(), wasm}};
    Message reply;
    try {
      reply = a.post_json("/v1/circuits", body, std::max(t, 40 * 60 * 1000));
    } catch (const Refused& e) {
      throw Refused(with_callers_names(e.what(), names), e.retry_after_ms);
    }
    return {{"ok", true}, {"circuit", circuit_from_api(reply.value("circuit", Message::object()))}};
  }
  if (type == "circuit_list") {
    Message reply = a.get("/v1/circuits", t);
    Message list = Message::array();
    for (const auto& c : reply.value("circuits", Message::array())) list.push_back(circuit_from_api(c));
    return {{"ok", true}, {"circuits", list}};
  }
  if (type == "circuit_remove") {
    a.del("/v1/circuits/" + query_escape(protocol::get_str(req, "name")), t);
    return {{"ok", true}};
  }
  throw CtlError(kExitUsage, "'" + type + "' is not offered by the API: run it on the farm's host (zkfarmctl --state-dir)");
}

}  // namespace zkfarm::ctl
