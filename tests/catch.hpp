#pragma once
// One include for Catch2 v3 (GPU machine's image) and v2 (Debian 12).
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
namespace Catch {
// v2's spelling of the substring matcher, so CHECK_THAT reads alike on both.
inline auto Contains(const std::string& s) { return Matchers::ContainsSubstring(s); }
}  // namespace Catch
#else
#include <catch2/catch.hpp>
#endif
