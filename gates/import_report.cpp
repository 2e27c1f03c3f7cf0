#include "gates/import_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "gates/json_input.hpp"
#include "gates/metric_range.hpp"

namespace ts {
namespace {

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}
bool starts_with(const std::string& s, const std::string& pre) { return s.rfind(pre, 0) == 0; }

std::string normalise(std::string name, const ImportOptions& opts) {
  bool again = true;
  while (again) {
    again = false;
    for (const auto& suf : opts.strip_suffixes)
      if (!suf.empty() && ends_with(name, suf) && name.size() > suf.size()) {
        name.resize(name.size() - suf.size());
        again = true;
      }
  }
  return name;
}

// A section name without its unit and statistic suffixes, and the level of
// the timing hierarchy it describes.
struct SectionInfo {
  std::string unit, statistic, level;
};
std::optional<SectionInfo> timing_section(const std::string& key) {
  SectionInfo s;
  std::string name = key;
  if (ends_with(name, "_milliseconds")) {
    s.unit = "ms";
    name.resize(name.size() - 13);
  } else if (ends_with(name, "_seconds")) {
    s.unit = "s";
    name.resize(name.size() - 8);
  } else {
    return std::nullopt;
  }
  for (const char* st : {"_p50", "_p90", "_p99", "_median", "_mean", "_min"})
    if (ends_with(name, st)) {
      s.statistic = std::string(st + 1);
      name.resize(name.size() - std::string(st).size());
      break;
    }
  if (s.statistic.empty()) s.statistic = "single";
  if (name.find("attention_internal") != std::string::npos) s.level = "attention_internal";
  else if (name.find("block") != std::string::npos) s.level = "block";
  else if (starts_with(name, "sampling_stage")) s.level = "sampling_stage";
  else if (starts_with(name, "sampling")) s.level = "sampling";
  else s.level = name;
  // A depth-1 section's quantity is what it times: "sampling_uninstrumented_two_step".
  return s;
}

std::string metric_from_report(const std::string& m) {
  if (m == "relative_l2" || m == "rel_l2") return "rel_l2";
  if (m == "relative_l1" || m == "rel_l1") return "rel_l1";
  return m;  // cosine, rmse, max_abs, mean_abs spelt as touchstone spells them
}

std::string against_from_report(const std::string& a, const ImportOptions& opts) {
  if (a == "exact" || a == "reference" || a == "fp64" || a == "float64") return "exact";
  return normalise(a, opts);
}

// "<backend>_<metric>_vs_<ref>" split as the greedy pattern
// ^(.+)_(metric)_vs_(.+)$ would, by hand: std::regex recurses once per
// character and a long key overflows the stack.
struct MetricKey {
  std::string backend, metric, ref;
};
std::optional<MetricKey> metric_key(const std::string& key) {
  static const char* const metrics[] = {"relative_l2", "rel_l2", "relative_l1", "rel_l1",
                                        "cosine",      "rmse",   "max_abs",     "mean_abs"};
  std::optional<MetricKey> best;
  size_t best_at = 0;
  for (const char* m : metrics) {
    const std::string mid = "_" + std::string(m) + "_vs_";
    const size_t at = key.rfind(mid);
    if (at == std::string::npos || at == 0 || at + mid.size() >= key.size()) continue;
    if (!best || at > best_at) {
      best = MetricKey{key.substr(0, at), m, key.substr(at + mid.size())};
      best_at = at;
    }
  }
  return best;
}

// A timing whose quantity is spelled like a metric (a stage called
// "rel_l2") would be written as a metric without a reference and so make a
// measurements file that `gate -m` refuses; the report is ambiguous there.
[[noreturn]] void throw_metric_named_timing(const std::string& at, const std::string& quantity) {
  throw InputError(at + ": a timing named '" + quantity + "', which is a quality metric's name (rename the stage)");
}

}  // namespace

MeasurementsFile import_report(const std::string& text, const std::string& where,
                               const ImportOptions& opts) {
  const auto j = json_input::parse(text, where);
  if (!j.is_object()) throw InputError(where + ": top level: expected an object, got " + json_input::type_name(j));
  MeasurementsFile out;
  out.source = where;
  // Normalised name -> the raw name that took it, per (level, quantity,
  // against); and every entry's identity, so both checks stay linear.
  std::map<std::string, std::string> shortened_by;
  std::map<std::string, std::string> provenance_of;
  auto add = [&](Measurement x, const std::string& raw) {
    if (raw.empty()) throw InputError(x.provenance + ": empty backend name");
    x.raw_backend = raw;
    x.backend = normalise(raw, opts);
    const std::string rest = "\n" + x.level + "\n" + x.quantity + "\n" + x.against;
    const auto [taken, fresh] = shortened_by.emplace(x.backend + rest, raw);
    // Stripping must not merge two backends that one section names apart.
    if (!fresh && taken->second != raw) {
      out.notes.push_back("kept '" + raw + "' unshortened: '" + x.backend + "' is already in " +
                          provenance_of.at(x.backend + rest));
      x.backend = raw;
    }
    const auto [seen, is_new] = provenance_of.emplace(x.backend + rest, x.provenance);
    if (!is_new)
      throw InputError(x.provenance + ": duplicate measurement of " + x.quantity + " (" + x.level +
                       ") for backend '" + x.backend + "' (also " + seen->second + ")");
    out.entries.push_back(std::move(x));
  };
  auto check_metric = [&](const Measurement& x, const std::string& path) {
    const auto range = metric_range(x.quantity);
    if (range && !range->contains(x.value))
      throw InputError(where + ": " + path + ": " + x.quantity + " " + format_number(x.value, 6) +
                       " is impossible (" + x.quantity + " is always in " + range->text() + ")");
  };

  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto& val = it.value();
    const auto sec = timing_section(key);
    if (sec) {
      if (!val.is_object())
        throw InputError(where + ": " + key + ": a timing section is an object ({backend: number} or "
                         "{backend: {quantity: number}}), got " + json_input::type_name(val));
      const auto& lv = measurement_levels();
      if (std::find(lv.begin(), lv.end(), sec->level) == lv.end() || sec->level == "quality")
        throw InputError(where + ": " + key + ": a timing section at no known level (its name must contain "
                         "'block' or 'attention_internal', or start with 'sampling')");
      const std::string qty1 = key.substr(0, key.find(sec->unit == "ms" ? "_milliseconds" : "_seconds"));
      for (auto b = val.begin(); b != val.end(); ++b) {
        const std::string path = key + "." + b.key();
        if (b.value().is_number()) {
          Measurement x;
          x.quantity = qty1;
          x.value = b.value().get<double>();
          x.unit = sec->unit;
          x.level = sec->level;
          x.statistic = sec->statistic;
          x.provenance = where + ": " + path;
          if (!(x.value > 0) || !std::isfinite(x.value))
            throw InputError(where + ": " + path + ": a timing must be a positive number");
          if (x.is_metric()) throw_metric_named_timing(where + ": " + path, x.quantity);
          add(x, b.key());
        } else if (b.value().is_object()) {
          if (b.value().empty()) throw InputError(where + ": " + path + ": no timings in it");
          for (auto q = b.value().begin(); q != b.value().end(); ++q) {
            const std::string qpath = path + "." + q.key();
            if (q.key().empty()) throw InputError(where + ": " + qpath + ": empty quantity name");
            if (!q.value().is_number())
              throw InputError(where + ": " + qpath + ": expected a number, got " +
                               json_input::type_name(q.value()));
            Measurement x;
            x.quantity = q.key();
            x.value = q.value().get<double>();
            x.unit = sec->unit;
            x.level = sec->level;
            x.statistic = sec->statistic;
            x.provenance = where + ": " + qpath;
            if (!(x.value > 0) || !std::isfinite(x.value))
              throw InputError(where + ": " + qpath + ": a timing must be a positive number");
            if (x.is_metric()) throw_metric_named_timing(where + ": " + qpath, x.quantity);
            add(x, b.key());
          }
        } else {
          throw InputError(where + ": " + path + ": expected a number or an object of numbers, got " +
                           json_input::type_name(b.value()));
        }
      }
      continue;
    }
    if (key.find("quality") != std::string::npos && val.is_object()) {
      for (auto q = val.begin(); q != val.end(); ++q) {
        const std::string path = key + "." + q.key();
        // A key that names a figure must hold one; prose elsewhere is a note.
        if (!q.value().is_number() && (metric_key(q.key()) || timing_section(q.key())))
          throw InputError(where + ": " + path + ": expected a number, got " + json_input::type_name(q.value()));
        if (q.value().is_string()) {
          out.notes.push_back(path + ": " + q.value().get<std::string>());
          continue;
        }
        if (!q.value().is_number()) {
          out.notes.push_back("skipped " + path + ": not a number");
          continue;
        }
        const double v = q.value().get<double>();
        const std::string& qk = q.key();
        if (const auto mk = metric_key(qk)) {
          Measurement x;
          x.quantity = metric_from_report(mk->metric);
          x.value = v;
          x.unit = "";
          x.level = "quality";
          x.against = against_from_report(mk->ref, opts);
          x.statistic = "single";
          x.provenance = where + ": " + path;
          check_metric(x, path);
          add(x, mk->backend);
          continue;
        }
        if (const auto ts = timing_section(qk)) {
          // "<backend>_p50_milliseconds": the variant's own attention timing.
          std::string raw = qk.substr(0, qk.size() - (ts->unit == "ms" ? 13 : 8));
          if (ts->statistic != "single") raw.resize(raw.size() - ts->statistic.size() - 1);
          if (raw.empty()) throw InputError(where + ": " + path + ": empty backend name");
          if (!(v > 0) || !std::isfinite(v))
            throw InputError(where + ": " + path + ": a timing must be a positive number");
          Measurement x;
          x.quantity = "attention";
          x.value = v;
          x.unit = ts->unit;
          x.level = "attention_variant";
          x.statistic = ts->statistic;
          x.provenance = where + ": " + path;
          add(x, raw);
          continue;
        }
        out.notes.push_back("unmapped " + path + " = " + q.value().dump());
      }
      continue;
    }
    out.context[key] = val;  // device, versions, shares, policy, targets
  }
  if (out.entries.empty()) throw InputError(where + ": no timing or quality figures found (not a report of the seed's layout)");
  return out;
}

MeasurementsFile import_report_file(const std::string& path, const ImportOptions& opts) {
  return import_report(json_input::read_text(path), path, opts);
}

}  // namespace ts
