#include "drivers/fixture_extract.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "drivers/run_estimate.hpp"
#include "fixtures/fixture.hpp"
#include "kernels_under_test/registry.hpp"

namespace ts {
namespace {

int64_t fx_parse_int(const std::string& s, const std::string& what) {
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != s.size() || v < 0) throw InputError(what + ": '" + s + "' is not a non-negative integer");
  return v;
}

// Rows [b, e) and heads `hs` of an [S, H, D] tensor.
Tensor fx_slice(const Tensor& t, const std::vector<int64_t>& hs, int64_t b, int64_t e) {
  const int64_t H = t.dim(1), D = t.dim(2), Hn = int64_t(hs.size());
  Tensor o({e - b, Hn, D}, t.dtype);
  for (int64_t s = b; s < e; ++s)
    for (int64_t i = 0; i < Hn; ++i)
      std::copy_n(t.data.begin() + ((s * H + hs[size_t(i)]) * D), D, o.data.begin() + (((s - b) * Hn + i) * D));
  return o;
}

}  // namespace

std::vector<int64_t> parse_head_list(const std::string& text) {
  std::vector<int64_t> out;
  size_t p = 0;
  while (p <= text.size()) {
    const size_t c = text.find(',', p);
    out.push_back(fx_parse_int(text.substr(p, c == std::string::npos ? std::string::npos : c - p), "--heads"));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  return out;
}

std::pair<int64_t, int64_t> parse_token_range(const std::string& text) {
  const size_t c = text.find(':');
  if (c == std::string::npos) throw InputError("--tokens: '" + text + "' is not A:B (first token, one past the last)");
  const int64_t a = fx_parse_int(text.substr(0, c), "--tokens"), b = fx_parse_int(text.substr(c + 1), "--tokens");
  if (b <= a) throw InputError("--tokens " + text + ": the range is empty (B must exceed A)");
  return {a, b};
}

std::string extract_fixture(const std::string& in, const std::string& out, const ExtractOptions& o) {
  if (!o.force && std::filesystem::exists(out))
    throw InputError(out + ": exists (use --force to replace it)");
  const Fixture fx = load_fixture(in);
  const BlockConfig& c = fx.config;
  const int64_t S = c.tokens(), H = c.heads;
  std::vector<int64_t> hs = o.heads;
  if (hs.empty())
    for (int64_t h = 0; h < H; ++h) hs.push_back(h);
  std::set<int64_t> seen;
  for (int64_t h : hs) {
    if (h >= H) throw InputError("--heads: head " + std::to_string(h) + " is out of range (" + in + " has " + std::to_string(H) + ")");
    if (!seen.insert(h).second) throw InputError("--heads: head " + std::to_string(h) + " is named twice");
  }
  const int64_t b = o.token_begin, e = o.token_end < 0 ? S : o.token_end;
  if (e > S) throw InputError("--tokens: " + std::to_string(e) + " is beyond the " + std::to_string(S) + " tokens of " + in);

  // Segments cut to [b, e); a video segment keeps whole latent frames only.
  BlockConfig nc = c;
  nc.heads = int64_t(hs.size());
  nc.hidden = nc.heads * c.head_dim;
  nc.segments.clear();
  const int64_t per = c.grid_h * c.grid_w;
  int64_t video = 0, at = 0;
  for (const Segment& s : c.segments) {
    const int64_t lo = std::max(b, s.start), hi = std::min(e, s.end());
    if (hi <= lo) continue;
    if (s.video && (lo > s.start || hi < s.end())) {
      if (c.token_order != "thw")
        throw InputError("--tokens " + std::to_string(b) + ":" + std::to_string(e) + " cuts video segment '" + s.name +
                         "' whose token_order is " + c.token_order + ": keep it whole (" + std::to_string(s.start) +
                         ":" + std::to_string(s.end()) + ")");
      if ((lo - s.start) % per || ((hi - s.start) % per && hi != s.end()))
        throw InputError("--tokens " + std::to_string(b) + ":" + std::to_string(e) + " cuts a latent frame of '" +
                         s.name + "': frames are " + std::to_string(per) + " tokens from " + std::to_string(s.start) +
                         " (use multiples of " + std::to_string(per) + " past it)");
    }
    Segment n = s;
    n.start = at;
    n.length = hi - lo;
    at += n.length;
    if (s.video) video += n.length;
    nc.segments.push_back(n);
  }
  if (video == 0)
    throw InputError("--tokens " + std::to_string(b) + ":" + std::to_string(e) +
                     " holds no whole latent frame: a fixture needs at least one (frames are " + std::to_string(per) + " tokens)");
  nc.grid_t = video / per;

  // The full sequence for the kept heads: what --with and exact run on.
  Tensor q = fx_slice(fx.q, hs, 0, S), k = fx_slice(fx.k, hs, 0, S), v = fx_slice(fx.v, hs, 0, S);
  BlockConfig hc = c;
  hc.heads = nc.heads;
  hc.hidden = nc.hidden;
  const AttentionProblem problem = make_attention_problem(q, k, v, hc);
  // Every spec parsed before anything runs.
  std::vector<std::pair<std::string, std::unique_ptr<AttentionBackend>>> runs;
  for (const auto& s : o.with) runs.push_back({s, make_attention_backend(s, BackendContext{in})});
  const bool has_exact = has_dataset(in, "/outputs/exact/attention");
  if (!has_exact) {
    const ExactChoice ex = choose_exact(o.exact, in, c);
    runs.push_back({ex.spec, make_attention_backend(ex.spec, BackendContext{in})});
  }

  const nlohmann::json from = {{"fixture", in}, {"heads", hs}, {"tokens", {b, e}},
                               {"note", "outputs computed on the full sequence of the kept heads, then sliced"}};
  std::vector<DatasetWrite> ds;
  ds.push_back({"/attention/q", fx_slice(fx.q, hs, b, e), {}});
  ds.push_back({"/attention/k", fx_slice(fx.k, hs, b, e), {}});
  ds.push_back({"/attention/v", fx_slice(fx.v, hs, b, e), {}});
  if (fx.observed) ds.push_back({"/attention/observed", fx_slice(*fx.observed, hs, b, e), {}});
  std::set<std::string> names;
  for (size_t i = 0; i < runs.size(); ++i) {
    AttentionBackend& be = *runs[i].second;
    const std::string name = (!has_exact && i + 1 == runs.size()) ? "exact" : be.name();
    const Tensor t = be.run(problem).out;
    nlohmann::json attrs = output_attrs(be.name(), be.is_stored() ? be.params().value("stored_params", nlohmann::json("{}")) : be.params(),
                                        std::nullopt, {{"extracted_from", from.dump()}});
    std::vector<int64_t> kept(size_t(nc.heads));  // t holds only the kept heads, in order
    for (int64_t h = 0; h < nc.heads; ++h) kept[size_t(h)] = h;
    ds.push_back({"/outputs/" + name + "/attention", fx_slice(t, kept, b, e), attrs});
    names.insert(name);
  }
  for (const auto& name : list_group(in, "/outputs")) {
    const std::string p = "/outputs/" + name + "/attention";
    if (names.count(name) || !has_dataset(in, p)) continue;
    nlohmann::json attrs = read_attrs(in, p);
    attrs["extracted_from"] = from.dump();
    ds.push_back({p, fx_slice(read_tensor(in, p), hs, b, e), attrs});
    names.insert(name);
  }
  FixtureMeta meta = fx.meta;
  meta.extra["extracted_from"] = from.dump();
  meta.notes = (meta.notes.empty() ? "" : meta.notes + "; ") + "extracted from " + in;
  meta.created_at.clear();
  WriteOptions wo;
  wo.replace = true;
  write_fixture(out, meta, nc, ds, wo);
  std::string hl;
  for (int64_t h : hs) hl += (hl.empty() ? "" : ",") + std::to_string(h);
  return "wrote " + out + ": heads " + hl + " and tokens " + std::to_string(b) + ":" + std::to_string(e) + " of " + in +
         " (S=" + std::to_string(e - b) + " H=" + std::to_string(nc.heads) + ", " + std::to_string(names.size()) +
         " outputs; timings and /block are not kept)";
}

}  // namespace ts
