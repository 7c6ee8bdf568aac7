#include "api/farm_link.hpp"

#include <memory>

#include "client/control_client.hpp"

namespace zkfarm::api {

protocol::Message FarmLink::call(const protocol::Message& request, int timeout_ms) const {
  // One client per thread; dropped after a failure that leaves its REQ socket
  // mid-exchange, so the next call starts clean.
  thread_local std::unique_ptr<client::Client> client;
  thread_local std::string client_dir;
  if (!client || client_dir != state_dir_) {
    client = std::make_unique<client::Client>(state_dir_, timeout_ms_);
    client_dir = state_dir_;
  }
  client->set_timeout_ms(timeout_ms > 0 ? timeout_ms : timeout_ms_);
  try {
    return client->call(request);
  } catch (const client::Refused& e) {
    throw FarmRefused(e.what(), e.retry_after_ms);
  } catch (const client::CtlError& e) {
    client.reset();
    throw FarmUnavailable(e.what());
  } catch (const protocol::ProtocolError& e) {
    client.reset();
    throw FarmUnavailable(std::string("malformed reply from zkfarmd: ") + e.what());
  }
}

}  // namespace zkfarm::api
