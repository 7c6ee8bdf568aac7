#pragma once
// A job of inputs over zkfarm-api: zkfarmd knows each input by the file
// zkfarm-api wrote it to (API_DIR/tmp/X/K.json), which tenant_text turns
// into "input K.json"; the client may name its inputs (`partition_names` of
// POST /v1/jobs, zkfarmctl sends the paths it read), and their error texts
// then name those instead, also long after the submit (docs/api.md).
#include <string>
#include <vector>

namespace zkfarm::api {

/// `text` with each "input K.json" (K a decimal index below names.size())
/// replaced by names[K]; other text, and indexes past the list, unchanged.
/// A name is never read as a pattern itself (the scan goes on after it).
std::string with_input_names(std::string text, const std::vector<std::string>& names);

}  // namespace zkfarm::api
