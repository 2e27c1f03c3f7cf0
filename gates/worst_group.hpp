#pragma once
// Which group (head, query block, latent frame) gave a breakdown metric its
// worst figure, so that a failing group rule can say where it failed and a
// rescaling fault shows its gain ("worst head 2, gain 1.050").
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ts {

struct WorstGroup {
  std::string kind;   // "head", "query block", "frame" ("cond" rows: index -1)
  int64_t index = -1;
  int64_t first_token = -1, last_token = -1;  // query blocks: the tokens they hold
  std::optional<double> rel_l2, gain;         // the group's own figures
  // "worst head 2, gain 1.050" / "worst query block 4 (tokens 512..639), rel_l2 0.2563, gain 0.93"
  std::string text(bool gain_rule) const;
  nlohmann::json to_json() const;
};

}  // namespace ts
