#include "witgen/graph_rewrite.hpp"

#include <cctype>

namespace zkfarm::witgen {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// "Foo_3_run" -> "template Foo"; "bar_1" -> "function bar"; "" otherwise.
std::string scope_name(std::string_view fn) {
  auto strip_number = [](std::string_view s) -> std::string_view {
    const size_t u = s.rfind('_');
    if (u == std::string_view::npos || u + 1 == s.size()) return {};
    for (size_t i = u + 1; i < s.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return {};
    return s.substr(0, u);
  };
  if (ends_with(fn, "_run")) {
    const std::string_view t = strip_number(fn.substr(0, fn.size() - 4));
    return t.empty() ? "" : "template " + std::string(t);
  }
  if (ends_with(fn, "_create")) return "";
  const std::string_view f = strip_number(fn);
  return f.empty() ? "" : "function " + std::string(f);
}

std::string rewrite_line(std::string_view line) {
  constexpr std::string_view kAssertIf = "if (!Fr_isTrue(";
  constexpr std::string_view kAssertTail = ")) std::cout << \"Failed assert in template/function \"";
  if (starts_with(line, kAssertIf)) {
    const size_t end = line.find(kAssertTail);
    const size_t at = line.find("\" line ");
    if (end != std::string_view::npos && at != std::string_view::npos) {
      const std::string_view x = line.substr(kAssertIf.size(), end - kAssertIf.size());
      size_t i = at + 7;
      std::string n;
      while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) n += line[i++];
      // The message reads `" line " << N` in some versions: then the line is unknown here.
      return "zkg_assert(" + std::string(x) + ", " + (n.empty() ? "0" : n) + ");";
    }
  }
  if (starts_with(line, "assert(Fr_isTrue(") && ends_with(line, "));")) return "";
  constexpr std::string_view kIf = "if(Fr_isTrue(";
  if (starts_with(line, kIf) && ends_with(line, ")){")) {
    const std::string_view x = line.substr(kIf.size(), line.size() - kIf.size() - 3);
    return "for (ZkgIf zkg_if(" + std::string(x) + "); zkg_if.pass() >= 0; zkg_if.next()) if (zkg_if.pass()) {";
  }
  std::string out(line);
  auto replace_all = [&](std::string_view from, std::string_view to) {
    for (size_t p = out.find(from); p != std::string::npos; p = out.find(from, p + to.size()))
      out.replace(p, from.size(), to);
  };
  if (starts_with(out, "while(Fr_isTrue(")) out.replace(0, 16, "while(zkg_loop(");
  replace_all("Fr_isTrue(", "zkg_is_true(");
  if (starts_with(out, "printf(")) out.replace(0, 7, "zkg_printf(");
  if (const size_t c = out.find("// line circom "); c != std::string::npos) {
    size_t i = c + 15;
    std::string n;
    while (i < out.size() && std::isdigit(static_cast<unsigned char>(out[i]))) n += out[i++];
    if (!n.empty()) out = "zkg_line = " + n + "; " + out;
  }
  if (starts_with(out, "void ") && ends_with(out, "{") && !ends_with(out, "{{")) {
    const size_t open = out.find('(');
    if (open != std::string::npos) {
      const std::string where = scope_name(std::string_view(out).substr(5, open - 5));
      if (!where.empty()) out += " ZkgScope zkg_scope(\"" + where + "\");";
    }
  }
  return out;
}

}  // namespace

std::string rewrite_for_recording(std::string_view cpp) {
  // #line 1: the circuit's lines keep their numbers after the include.
  std::string out = "#include \"witgen/graph_hooks.hpp\"\n#line 1\n";
  out.reserve(cpp.size() + cpp.size() / 4);
  size_t pos = 0;
  while (pos <= cpp.size()) {
    const size_t nl = cpp.find('\n', pos);
    const std::string_view line = cpp.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    out += rewrite_line(line);
    if (nl == std::string_view::npos) break;
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

}  // namespace zkfarm::witgen
