#include "catch.hpp"
#include "core/error.hpp"
#include "reference/backend_params.hpp"

TEST_CASE("backend specs parse into kind and key=value knobs") {
  auto p = ts::BackendParams::parse("sol:tau=1.3,precision=int8_qk,compensation=off");
  CHECK(p.kind() == "sol");
  CHECK(p.get_double("tau", 0) == 1.3);
  CHECK(p.get_choice("precision", "bf16", {"bf16", "int8_qk"}) == "int8_qk");
  CHECK(p.get_bool("compensation", true) == false);
  CHECK(p.get_int("block_k", 64) == 64);
  CHECK_NOTHROW(p.finish());
  auto bare = ts::BackendParams::parse("exact");
  CHECK(bare.kind() == "exact");
  CHECK_NOTHROW(bare.finish());
}

TEST_CASE("backend spec errors name the key") {
  auto expect = [](auto&& fn, const std::string& fragment) {
    try {
      fn();
      FAIL("no error, expected " << fragment);
    } catch (const ts::InputError& e) {
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
  };
  expect([] { ts::BackendParams::parse(":tau=1"); }, "missing backend name");
  expect([] { ts::BackendParams::parse("sol:tau"); }, "not key=value");
  expect([] { ts::BackendParams::parse("sol:tau=1,tau=2"); }, "given twice");
  expect([] {
    auto p = ts::BackendParams::parse("sol:tau=abc");
    p.get_double("tau", 0);
  }, "tau=abc is not a number");
  expect([] {
    auto p = ts::BackendParams::parse("sol:tau=nan");
    p.get_double("tau", 0);
  }, "tau=nan is not a finite number");
  for (const char* spec : {"sol:tau=inf", "sol:tau=-Infinity", "sol:tau=1e999"})
    expect([spec] {
      auto p = ts::BackendParams::parse(spec);
      p.get_double("tau", 0);
    }, "is not a ");
  expect([] {
    auto p = ts::BackendParams::parse("sol:tua=1");
    p.get_double("tau", 0);
    p.finish();
  }, "unknown parameter tua");
  expect([] {
    auto p = ts::BackendParams::parse("sage2:smooth_k=maybe");
    p.get_bool("smooth_k", true);
  }, "smooth_k=maybe");
}

TEST_CASE("an unknown key lists the backend's known keys and the nearest one") {
  auto p = ts::BackendParams::parse("sol:tua=1.3,precison=bf16");
  p.get_double("tau", 0);
  p.get_string("precision", "bf16");
  p.get_int("block_k", 64);
  try {
    p.finish();
    FAIL("no error");
  } catch (const ts::InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("unknown parameters precison, tua") != std::string::npos);
    CHECK(m.find("did you mean 'precision'?") != std::string::npos);
    CHECK(m.find("did you mean 'tau'?") != std::string::npos);
    CHECK(m.find("known for sol: block_k, precision, tau)") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
  }
}
