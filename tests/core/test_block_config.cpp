#include "catch.hpp"
#include "core/block_config.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

TEST_CASE("presets have block.md's geometry") {
  const auto b24 = ts::preset_config("block24");
  CHECK(b24.tokens() == 37810);
  CHECK(b24.video_tokens() == 37296);
  CHECK(b24.hidden == 5376);
  CHECK(b24.heads * b24.head_dim == 7168);
  CHECK(b24.ffn_hidden == 14336);
  CHECK(ts::preset_config("ci").tokens() == 832);
  CHECK(ts::preset_config("medium").tokens() == 8578);
  CHECK(ts::preset_config("tiny").tokens() == 72);
  for (const auto& name : ts::preset_names()) CHECK_NOTHROW(ts::preset_config(name).validate(name));
  CHECK_THROWS_AS(ts::preset_config("huge"), ts::InputError);
}

TEST_CASE("config validation names the broken rule") {
  auto c = ts::preset_config("tiny");
  auto expect_error = [&](const ts::BlockConfig& bad, const std::string& fragment) {
    try {
      bad.validate("f.h5: /config");
      FAIL("no error for " << fragment);
    } catch (const ts::InputError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("f.h5: /config") == 0);
      CHECK(msg.find(fragment) != std::string::npos);
      CHECK(msg.find('\n') == std::string::npos);
    }
  };
  auto gap = c;
  gap.segments[1].start += 1;
  expect_error(gap, "gap");
  auto overlap = c;
  overlap.segments[1].start -= 1;
  expect_error(overlap, "overlaps");
  auto odd = c;
  odd.head_dim = 33;
  expect_error(odd, "head_dim must be even");
  auto rot = c;
  rot.rope_rot_dims = 25;
  expect_error(rot, "rope_rot_dims");
  auto big = c;
  big.rope_rot_dims = 36;
  big.rope_freqs_per_axis = 6;
  expect_error(big, "rope_rot_dims");
  auto freqs = c;
  freqs.rope_freqs_per_axis = 3;
  expect_error(freqs, "rope_freqs_per_axis");
  auto video = c;
  video.grid_t = 3;
  expect_error(video, "video segments");
  // Found by fuzz_fixture (UBSan: signed overflow in video_tokens()).
  auto huge_grid = c;
  huge_grid.grid_t = 8032558528477948785;
  huge_grid.grid_h = 4;
  expect_error(huge_grid, "grid_t 8032558528477948785 is beyond touchstone's limit");
  auto wide_grid = c;  // each factor within bounds, the product not
  wide_grid.grid_t = wide_grid.grid_h = wide_grid.grid_w = int64_t(1) << 22;
  expect_error(wide_grid, "grid_t*grid_h*grid_w overflows");
  auto huge_segment = c;
  huge_segment.segments.back().length = INT64_MAX - 1;
  expect_error(huge_segment, "start + length overflows");
  auto many_tokens = c;
  many_tokens.segments.back().length = int64_t(1) << 40;
  expect_error(many_tokens, "beyond touchstone's limit of 2147483648");
  // ... and validate.cpp's 2 x ffn_hidden (UBSan at 2 x 2^63-1).
  auto ffn = c;
  ffn.ffn_hidden = INT64_MAX;
  expect_error(ffn, "ffn_hidden 9223372036854775807 is beyond");
  auto width = c;
  width.heads = width.head_dim = int64_t(1) << 20;
  expect_error(width, "heads x head_dim");
}

TEST_CASE("segments JSON round-trips and is parsed strictly") {
  const auto c = ts::preset_config("ci");
  const auto back = ts::segments_from_json(ts::segments_to_json(c.segments), "x");
  REQUIRE(back.size() == c.segments.size());
  for (size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i].name == c.segments[i].name);
    CHECK(back[i].video == c.segments[i].video);
    CHECK(back[i].start == c.segments[i].start);
    CHECK(back[i].length == c.segments[i].length);
  }
  CHECK_THROWS_AS(ts::segments_from_json("[{\"name\":\"v\",\"kind\":\"pic\",\"start\":0,\"length\":4}]", "x"),
                  ts::InputError);
  CHECK_THROWS_AS(ts::segments_from_json("[{\"name\":\"v\",\"kind\":\"video\",\"start\":0}]", "x"),
                  ts::InputError);
  CHECK_THROWS_AS(ts::segments_from_json("{", "x"), ts::InputError);
}

TEST_CASE("frame_of_token follows thw and tile orders") {
  auto c = ts::preset_config("tiny");  // 2 x 4 x 8 video, then 8 conditioning tokens
  CHECK(c.frame_of_token(0) == 0);
  CHECK(c.frame_of_token(31) == 0);
  CHECK(c.frame_of_token(32) == 1);
  CHECK(c.frame_of_token(63) == 1);
  CHECK(c.frame_of_token(64) == -1);
  c.token_order = "tile:1x2x4";  // tiles of 8 tokens inside one frame
  CHECK(c.frame_of_token(31) == 0);
  CHECK(c.frame_of_token(32) == 1);
  c.token_order = "tile:2x2x2";  // a tile spans both frames: 4 tokens of frame 0, then 4 of frame 1
  CHECK(c.frame_of_token(0) == 0);
  CHECK(c.frame_of_token(3) == 0);
  CHECK(c.frame_of_token(4) == 1);
  CHECK(c.frame_of_token(8) == 0);
}

TEST_CASE("BSHDView reads [S, H, D] with its strides") {
  ts::Tensor t({3, 2, 4}, ts::DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data[static_cast<size_t>(i)] = double(i);
  const auto v = ts::BSHDView::of(t);
  CHECK(v(2, 1, 3) == 2 * 8 + 1 * 4 + 3);
  CHECK(v.row(1, 1)[2] == 8 + 4 + 2);
  ts::Tensor flat({24}, ts::DType::f32);
  CHECK_THROWS_AS(ts::BSHDView::of(flat), ts::InputError);
}
