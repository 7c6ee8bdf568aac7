// Fuzz target: arbitrary requests through zkfarm-api's admission and body
// parsing (api/service.hpp), without sockets or a farm: routing of the method
// and path, the token check against a real store (SQLite in a temporary
// file, one valid token), the query's percent-decoding, and parse_body on
// the JSON a route would read. Links zkfarm_api.
//
// Input: lines. Line 1: METHOD PATH[?QUERY]; line 2: "1" to send the valid
// token, anything else is sent as the Authorization value; line 3: a
// Content-Length; the rest: the body. Besides the sanitizers' findings, it
// aborts when a promise breaks:
// - a refusal is a JSON error object with a code and a message;
// - nothing without the valid token is admitted (but /v1/health);
// - an upload is admitted only within its declared length and the limit;
// - parse_body returns an object or throws ApiError 400, nothing else.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "api/farm_link.hpp"
#include "api/http_server.hpp"
#include "api/service.hpp"
#include "api/store.hpp"

namespace {

using namespace zkfarm::api;

void check(bool ok) {
  if (!ok) std::abort();
}

struct World {
  std::string dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<Service> service;
  std::string token;
  World() {
    dir = std::filesystem::temp_directory_path() / ("zkfarm-api-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir + "/uploads");
    store = std::make_unique<Store>(dir + "/api.sqlite", true);
    token = store->add_token("fuzz", Role::kSubmit, 1).text;
    ServiceOptions o;
    o.api_dir = dir;
    o.max_upload_bytes = 1 << 20;
    o.fast_workers = o.slow_workers = o.wait_workers = 1;
    service = std::make_unique<Service>(o, *store, FarmLink(dir + "/no-farm", 100));
  }
  ~World() { std::filesystem::remove_all(dir); }
};

std::string line(std::string_view& in) {
  const auto nl = in.find('\n');
  std::string out(in.substr(0, nl));
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World w;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  RequestHead h;
  const std::string first = line(in);
  const auto sp = first.find(' ');
  h.method = first.substr(0, sp);
  h.target = sp == std::string::npos ? "" : first.substr(sp + 1);
  const auto q = h.target.find('?');
  h.path = h.target.substr(0, q);
  if (q != std::string::npos)
    if (auto v = percent_decode(std::string_view(h.target).substr(q + 1))) h.query["q"] = *v;
  const std::string auth = line(in);
  const bool good = auth == "1";
  h.fields["authorization"] = good ? "Bearer " + w.token : auth;
  const std::string len = line(in);
  if (!len.empty() && len.size() < 12 && len.find_first_not_of("0123456789") == std::string::npos)
    h.content_length = std::stoull(len);
  const Admission a = w.service->admit(h);
  if (a.reject) {
    check(a.reject->status >= 400);
    const json body = json::parse(a.reject->body, nullptr, false);
    check(body.is_object() && body.contains("error") && body["error"].contains("code") && body["error"].contains("message"));
  } else {
    check(good || h.path == "/v1/health");
    if (a.body == BodyKind::kUpload) check(h.content_length && *h.content_length == a.limit && a.limit <= (1 << 20));
    if (a.body == BodyKind::kJson) {
      try {
        const json b = parse_body(std::string(in));
        check(b.is_object());
        (void)b.dump(-1, ' ', false, json::error_handler_t::replace);
      } catch (const ApiError& e) {
        check(e.status == 400);
      }
    }
  }
  return 0;
}
