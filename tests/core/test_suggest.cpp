// "Did you mean": the nearest known name for a typo, nothing for another word.
#include "catch.hpp"
#include "core/block_config.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps") {
  CHECK(ts::edit_distance("sage_compt", "sage_compat") == 1);
  CHECK(ts::edit_distance("tua", "tau") == 1);  // neighbours swapped
  CHECK(ts::edit_distance("", "abc") == 3);
  CHECK(ts::edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("closest name: a typo finds its name, another word finds none") {
  const std::vector<std::string> gates = {"sparse_acceptance", "sage_compat", "bit_exact"};
  CHECK(ts::closest_name("sage_compt", gates) == std::optional<std::string>("sage_compat"));
  CHECK(ts::closest_name("bitexact", gates) == std::optional<std::string>("bit_exact"));
  CHECK_FALSE(ts::closest_name("flash", gates));
  CHECK_FALSE(ts::closest_name("sage_compat", gates));  // known already: nothing to suggest
  CHECK(ts::closest_name("vid", ts::segment_kinds()) == std::optional<std::string>("video"));
  CHECK(ts::did_you_mean("tua", {"tau", "topk"}) == "did you mean 'tau'? ");
  CHECK(ts::did_you_mean("zzz", {"tau", "topk"}).empty());
}

TEST_CASE("a segment kind that is not one names the value and the kinds") {
  try {
    ts::segments_from_json(R"([{"name":"v","kind":"vid","start":0,"length":4}])", "f.h5: /config");
    FAIL("no error");
  } catch (const ts::InputError& e) {
    CHECK(std::string(e.what()) ==
          "f.h5: /config: segments[0].kind is \"vid\", not a segment kind (did you mean 'video'? kinds: video, "
          "cond: video tokens are routed, cond tokens never)");
  }
}
