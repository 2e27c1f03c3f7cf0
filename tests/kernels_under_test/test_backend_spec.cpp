// A backend spec is parsed once (kernels_under_test/registry.hpp BackendSpec):
// its kind is a row of the one kind table, which holds the kind's factory and
// parameter defaults, and nothing else in the tree tests a spec's text for its kind.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/error.hpp"
#include "kernels_under_test/registry.hpp"

TEST_CASE("backend spec: the kind is the table's row, with what it is") {
  const auto sol = ts::BackendSpec::parse("sol:tau=1.3,precision=int8_qk");
  CHECK(sol.kind_name() == "sol");
  CHECK(sol.is_emulation());
  CHECK(sol.routes());
  CHECK_FALSE(sol.is_stored());
  CHECK_FALSE(sol.is_dense_cpu());
  CHECK(sol.text() == "sol:tau=1.3,precision=int8_qk");
  CHECK(sol.params().has("tau"));

  const auto ex = ts::BackendSpec::parse("exact:precision=fp32");
  CHECK(ex.is_exact_reference());
  CHECK(ex.is_dense_cpu());
  CHECK(ts::BackendSpec::parse("sage2").is_dense_cpu());

  const auto st = ts::BackendSpec::parse("stored:my_kernel");
  CHECK(st.is_stored());
  CHECK(st.argument() == "my_kernel");
  CHECK_FALSE(st.is_emulation());

  const auto pl = ts::BackendSpec::parse("plugin:/x/y.so,mode=fast");
  CHECK(pl.is_plugin());
  CHECK(pl.argument() == "/x/y.so");

  // The device mirrors are rows in every build; one without CUDA cannot make them.
  for (const char* d : {"exact_cuda", "sage2_cuda:preset=sm121", "sol_cuda:tau=1.3"}) {
    const auto s = ts::BackendSpec::parse(d);
    CHECK(s.is_device());
    CHECK(s.is_emulation());
#ifndef TOUCHSTONE_HAVE_CUDA
    CHECK_THROWS_AS(s.make({}), ts::InputError);
#endif
  }
}

TEST_CASE("backend spec: every row has its factory and defaults; unknown kinds name the known") {
  for (const auto& k : ts::attention_backend_kind_table()) {
    INFO(k.name);
    CHECK(!k.description.empty());
    if (!k.device) CHECK(k.make != nullptr);
    if (k.emulation) CHECK(!k.defaults.empty());
  }
  try {
    ts::BackendSpec::parse("exactt");
    FAIL("no error");
  } catch (const ts::InputError& e) {
    CHECK(std::string(e.what()).find("unknown backend 'exactt' in 'exactt' (known: exact, sage2, sol") == 0);
  }
  CHECK_THROWS_AS(ts::BackendSpec::parse("sol:tau"), ts::InputError);
  CHECK_FALSE(ts::BackendSpec::try_parse("sage2_sm121_measured"));
  CHECK_FALSE(ts::is_emulation_spec("nope"));
  CHECK(ts::is_stored_spec("stored:x"));
  // Making goes through the row's factory, which reads (and checks) the parameters.
  CHECK(ts::BackendSpec::parse("sol:tau=1.3").make({})->name() == ts::make_attention_backend("sol:tau=1.3", {})->name());
  CHECK_THROWS_AS(ts::BackendSpec::parse("sol:taux=1").make({}), ts::InputError);
}

TEST_CASE("backend spec: no file tests a spec's text for its kind (the registry parses it)") {
  // "stored:", "plugin:", "sol" ... as a prefix test of a string: the kind
  // parsed by hand. The registry itself and the plugin kind's own parser of
  // its spec are where that text is read.
  const std::regex by_prefix(R"re(rfind\("(stored|plugin|sol|sage2|exact)[:"])re");
  const std::regex by_suffix(R"re("_cuda"\)? *!= *0|compare\([^)]*"_cuda")re");
  std::vector<std::string> offenders;
  for (const char* dir : {"drivers", "tools", "gates", "fixtures", "reference", "core", "python/src", "kernels_under_test"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(TOUCHSTONE_SOURCE_DIR) + "/" + dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".cu") continue;
      const std::string rel = std::filesystem::relative(e.path(), TOUCHSTONE_SOURCE_DIR).string();
      if (rel == "kernels_under_test/registry.cpp" || rel == "kernels_under_test/plugin_backend.cpp") continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      if (std::regex_search(text, by_prefix) || std::regex_search(text, by_suffix)) offenders.push_back(rel);
    }
  std::string list;
  for (const auto& o : offenders) list += o + " ";
  INFO("kind parsed by hand in: " << list);
  CHECK(offenders.empty());
}
