#pragma once
// Rewriting a circuit's generated C++ (CIRCUIT.cpp of `circom --c`) for the
// graph recorder (graph_recorder.cpp): its truth tests, asserts and logs go
// through the recorder's hooks (graph_hooks.hpp), and it says where it is.
// circom's generator writes these as fixed line shapes (circom 2.1–2.2):
//   if (!Fr_isTrue(X)) std::cout << "Failed assert in template/function " … line N. …
//   assert(Fr_isTrue(X));                 -> zkg_assert(X, N); (one line, the other emptied)
//   if(Fr_isTrue(X)){                     -> for (ZkgIf …(X); …) if (….pass()) {
//   while(Fr_isTrue(X)){                  -> while(zkg_loop(X)){
//   any other Fr_isTrue(                  -> zkg_is_true(
//   printf(                               -> zkg_printf(   (log())
//   … // line circom N                    -> zkg_line = N; …
//   void Foo_3_run(…){  / void bar_1(…){  -> … ZkgScope …("template Foo" / "function bar");
// Lines keep their numbers, so a compiler's message still points into the
// circuit's own file.
#include <string>
#include <string_view>

namespace zkfarm::witgen {

/// The recorder's version of `cpp`, CIRCUIT.cpp's text. Never fails: a line
/// of another shape is left as it is, and a truth test the rewrite did not
/// recognise still reaches the recorder (Fr_isTrue is its too).
std::string rewrite_for_recording(std::string_view cpp);

}  // namespace zkfarm::witgen
