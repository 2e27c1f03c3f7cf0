#!/usr/bin/env python3
"""Writes malformed gate, measurements and report files to OUTDIR and
OUTDIR/cases.jsonl, one case per line:
  {"name": ..., "argv": ["{touchstone}", ...], "files": [paths that must not change]}
Every case must end with exit 2 and one line on stderr (run_corpus.py).
Generated, not committed: each case says in code what is wrong with it."""
import json
import os
import sys

OUT = None
CASES = []

GATE = {"schema": "touchstone.gate/1", "name": "g",
        "rules": [{"id": "acc", "metric": "rel_l2", "against": "exact", "max": 0.05},
                  {"id": "speed", "metric": "speedup", "min": 1.0}]}
MEAS = {"schema": "touchstone.measurements/1", "source": "corpus",
        "entries": [
            {"backend": "sage2", "quantity": "attention", "value": 10, "unit": "ms", "level": "block", "provenance": "c"},
            {"backend": "k", "quantity": "attention", "value": 5, "unit": "ms", "level": "block", "provenance": "c"},
            {"backend": "k", "quantity": "rel_l2", "against": "sage2", "value": 0.01, "unit": "",
             "level": "quality", "provenance": "c"}]}
REPORT = {"device": "x",
          "representative_block_24_p50_milliseconds": {"sage2": {"attention": 10}, "k": {"attention": 5}},
          "quality_gates": {"k_relative_l2_vs_sage2": 0.01, "conclusion": "prose is a note"}}


def write(name, data):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def dumps(obj):
    return json.dumps(obj, indent=1)


def deep(n, open_="[", close="]", inner="1"):
    return open_ * n + inner + close * n


def deep_obj(n):
    return '{"a":' * n + "1" + "}" * n


def with_raw(obj, placeholder, raw):
    """obj dumped with the string "<placeholder>" replaced by raw JSON text."""
    return sub(dumps(obj), json.dumps(placeholder), raw)


def sub(text, old, new, count=-1):
    """text.replace that fails loudly when `old` is absent (a case that
    silently stayed valid would test nothing)."""
    assert old in text, f"{old!r} not in the generated text"
    return text.replace(old, new, count)


def clone(obj):
    return json.loads(json.dumps(obj))


def previous(name):
    """An output file that already exists: a failed run must leave it alone."""
    return write(name, "previous contents of " + name + "\n")


def gate_case(name, text):
    g = write(name + ".gate.json", text)
    m = os.path.join(OUT, "base.measurements.json")
    out = previous(name + ".gate-report.json")
    CASES.append({"name": name, "argv": ["{touchstone}", "gate", "--gate", g, "--measurements", m,
                                         "--json", out],
                  "files": [g, m, out]})


def meas_case(name, text):
    m = write(name + ".measurements.json", text)
    out = previous(name + ".gate-report.json")
    CASES.append({"name": name, "argv": ["{touchstone}", "gate", "--gate", "sparse_acceptance",
                                         "--measurements", m, "--json", out],
                  "files": [m, out]})


def report_case(name, text):
    r = write(name + ".report.json", text)
    out = previous(name + ".imported.json")
    CASES.append({"name": name, "argv": ["{touchstone}", "import-report", r, "-o", out],
                  "files": [r, out]})


def gate_rule(name, **changes):
    g = clone(GATE)
    for k, v in changes.items():
        if v is None:
            g["rules"][0].pop(k, None)
        else:
            g["rules"][0][k] = v
    gate_case(name, dumps(g))


def gate_raw_value(name, key, raw, rule=0):
    g = clone(GATE)
    g["rules"][rule][key] = "@@RAW@@"
    gate_case(name, with_raw(g, "@@RAW@@", raw))


def entry(name, index=2, raw=None, **changes):
    m = clone(MEAS)
    for k, v in changes.items():
        if v is None:
            m["entries"][index].pop(k, None)
        else:
            m["entries"][index][k] = v
    text = dumps(m)
    if raw is not None:
        text = sub(text, json.dumps("@@RAW@@"), raw)
    meas_case(name, text)


def report_with(name, raw=None, **top):
    r = clone(REPORT)
    r.update(top)
    text = dumps(r)
    if raw is not None:
        text = sub(text, json.dumps("@@RAW@@"), raw)
    report_case(name, text)


def gates():
    # Nesting: a value nested far past anything a gate needs.
    for n in (200, 5000, 200000):
        g = clone(GATE)
        g["description"] = "@@RAW@@"
        gate_case(f"gate_nested_array_{n}", with_raw(g, "@@RAW@@", deep(n)))
    gate_case("gate_nested_object_200000", with_raw(dict(GATE, description="@@RAW@@"), "@@RAW@@", deep_obj(200000)))
    gate_case("gate_nested_unclosed", deep(100000).rstrip("]"))
    # Numbers a double cannot hold.
    for key, raw in (("max", "1e999"), ("max", "-1e999"), ("max", "1e-400"), ("max", "-1e-400"),
                     ("max", "1" * 400), ("max", "0.0000001e-399"), ("max", "NaN"), ("max", "Infinity"),
                     ("max", "-Infinity"), ("max", "0x10"), ("max", "01"), ("max", "1.")):
        gate_raw_value(f"gate_{key}_{raw[:12].replace('.', 'p').replace('-', 'm')}", key, raw)
    gate_raw_value("gate_min_1e999", "min", "1e999", rule=1)
    gate_raw_value("gate_confidence_1e-400", "confidence", "1e-400", rule=1)
    # Wrong types.
    gate_case("gate_rules_object", dumps(dict(GATE, rules={"acc": GATE["rules"][0]})))
    gate_case("gate_rule_number", dumps(dict(GATE, rules=[5])))
    gate_case("gate_name_array", dumps(dict(GATE, name=[])))
    gate_case("gate_schema_number", dumps(dict(GATE, schema=1)))
    gate_case("gate_top_string", dumps("touchstone.gate/1"))
    gate_case("gate_top_null", "null")
    gate_rule("gate_id_number", id=7)
    gate_rule("gate_metric_null", metric=None)
    gate_rule("gate_max_string", max="0.05")
    gate_rule("gate_max_bool", max=True)
    gate_rule("gate_optional_string", optional="yes")
    gate_rule("gate_tensor_number", tensor=5)
    # Bounds outside what the metric can be.
    gate_rule("gate_rel_l2_max_negative", max=-1)
    gate_rule("gate_rel_l2_min_negative", min=-5, max=None)
    gate_rule("gate_cosine_min_above_1", metric="cosine", min=2, max=None)
    gate_rule("gate_cosine_max_below_m1", metric="cosine", max=-2)
    gate_rule("gate_identical_fraction_max_negative", metric="identical_fraction", max=-0.5)
    gate_rule("gate_zero_fraction_min_above_1", metric="zero_fraction", min=1.5, max=None)
    g = clone(GATE)
    g["rules"][1]["min"] = 0
    gate_case("gate_speedup_min_zero", dumps(g))
    g["rules"][1]["min"] = -1
    gate_case("gate_speedup_min_negative", dumps(g))
    g["rules"][1]["confidence"] = 1
    g["rules"][1]["min"] = 1
    gate_case("gate_confidence_one", dumps(g))
    gate_rule("gate_ratio_negative", max=None, max_ratio_to_baseline=-1)
    # Empty names.
    gate_rule("gate_id_empty", id="")
    gate_rule("gate_metric_empty", metric="")
    gate_case("gate_name_empty", dumps(dict(GATE, name="")))
    gate_case("gate_baseline_empty", dumps(dict(GATE, baseline="")))
    # Duplicates.
    gate_case("gate_duplicate_top_key", dumps(GATE)[:-1] + ', "name": "again"}')
    gate_case("gate_duplicate_rule_key", sub(dumps(GATE), '"max": 0.05', '"max": 0.05, "max": 0.5'))
    gate_case("gate_duplicate_id", dumps(dict(GATE, rules=[GATE["rules"][0], GATE["rules"][0]])))
    gate_case("gate_duplicate_key_deep", sub(dumps(dict(GATE, description="@@")), 
        '"@@"', '{"a": {"b": 1, "b": 2}}'))
    # Invalid UTF-8 and characters that would break the one-line message.
    base = dumps(GATE).encode()
    gate_case("gate_utf8_ff_in_name", sub(base, b'"name": "g"', b'"name": "g\xff"'))
    gate_case("gate_utf8_overlong", sub(base, b'"name": "g"', b'"name": "\xc0\xaf"'))
    gate_case("gate_utf8_truncated", sub(base, b'"name": "g"', b'"name": "\xe2\x82"'))
    gate_case("gate_utf8_surrogate_bytes", sub(base, b'"name": "g"', b'"name": "\xed\xa0\x80"'))
    gate_case("gate_utf8_lone_surrogate_escape", sub(base, b'"name": "g"', b'"name": "\\ud800"'))
    gate_case("gate_utf8_in_key", sub(base, b'"rules"', b'"r\xfeules"'))
    gate_case("gate_utf8_outside_string", b"\xff" + base)
    gate_rule("gate_newline_in_metric", metric="rel\nl2")
    gate_rule("gate_escape_in_unknown_key", **{"bad\u001b[31mkey": 1})
    gate_case("gate_nul_byte", sub(base, b'"g"', b'"g\x00"'))
    # Very long strings.
    gate_rule("gate_long_metric", metric="m" * 1_000_000)
    gate_rule("gate_long_key", **{"k" * 1_000_000: 1})
    # Broken JSON.
    gate_case("gate_empty", "")
    gate_case("gate_whitespace", " \n\t ")
    gate_case("gate_truncated", dumps(GATE)[:40])
    gate_case("gate_trailing_garbage", dumps(GATE) + " x")
    gate_case("gate_trailing_comma", dumps(GATE)[:-2] + ",\n}")
    gate_case("gate_comment", "// gate\n" + dumps(GATE))
    gate_case("gate_single_quotes", sub(dumps(GATE), '"', "'"))
    gate_case("gate_two_documents", dumps(GATE) + dumps(GATE))


def measurements():
    write("base.measurements.json", dumps(MEAS))
    m = clone(MEAS)
    m["context"] = "@@RAW@@"
    for n in (200, 200000):
        meas_case(f"meas_nested_context_{n}", with_raw(m, "@@RAW@@", deep(n)))
    meas_case("meas_nested_context_object", with_raw(m, "@@RAW@@", deep_obj(200000)))
    for raw in ("1e999", "-1e999", "1e-400", "-1e-400", "9" * 400):
        entry(f"meas_value_{raw[:8].replace('-', 'm')}", raw=raw, value="@@RAW@@")
        entry(f"meas_timing_{raw[:8].replace('-', 'm')}", index=0, raw=raw, value="@@RAW@@")
    entry("meas_sample_1e-400", index=0, raw="[10, 1e-400]", samples="@@RAW@@")
    entry("meas_sample_1e999", index=0, raw="[10, 1e999]", samples="@@RAW@@")
    # Figures a metric cannot take.
    entry("meas_rel_l2_negative", value=-0.5)
    entry("meas_rmse_negative", quantity="rmse", value=-1)
    entry("meas_cosine_above_1", quantity="cosine", value=2)
    entry("meas_cosine_below_m1", quantity="cosine", value=-1.5)
    entry("meas_identical_fraction_above_1", quantity="identical_fraction", value=1.5)
    entry("meas_zero_fraction_negative", quantity="zero_fraction", value=-0.1)
    entry("meas_nonfinite_negative", quantity="nonfinite", value=-3)
    entry("meas_timing_zero", index=0, value=0)
    entry("meas_timing_negative", index=0, value=-10)
    # Empty or unknown names.
    entry("meas_backend_empty", backend="")
    entry("meas_quantity_empty", quantity="")
    entry("meas_against_empty", against="")
    entry("meas_level_galaxy", index=0, level="galaxy")
    entry("meas_metric_level_block", level="block")
    entry("meas_timing_level_quality", index=0, level="quality")
    entry("meas_tensor_unknown", tensor="mlp")
    entry("meas_samples_empty", index=0, samples=[])
    entry("meas_samples_on_metric", samples=[0.1, 0.2])
    entry("meas_samples_string", index=0, samples="10,11")
    entry("meas_samples_negative", index=0, samples=[10, -1])
    entry("meas_unit_on_metric", unit="ms")
    entry("meas_unit_empty_timing", index=0, unit="")
    entry("meas_against_on_timing", index=0, against="sage2")
    # Wrong types.
    entry("meas_value_string", value="0.01")
    entry("meas_value_missing", value=None)
    entry("meas_backend_number", backend=3)
    meas_case("meas_entries_object", dumps(dict(MEAS, entries={"a": MEAS["entries"][0]})))
    meas_case("meas_entry_array", dumps(dict(MEAS, entries=[[1, 2]])))
    meas_case("meas_context_array", dumps(dict(MEAS, context=[1])))
    meas_case("meas_notes_number", dumps(dict(MEAS, notes=[1])))
    meas_case("meas_empty_entries", dumps(dict(MEAS, entries=[])))
    # Duplicates.
    meas_case("meas_duplicate_entry_key", sub(dumps(MEAS), '"value": 0.01', '"value": 0.01, "value": 0.02'))
    meas_case("meas_duplicate_top_key", dumps(MEAS)[:-1] + ', "source": "again"}')
    meas_case("meas_duplicate_context_key", sub(dumps(dict(MEAS, context="@@")), 
        '"@@"', '{"device": "a", "device": "b"}'))
    meas_case("meas_duplicate_entry", dumps(dict(MEAS, entries=MEAS["entries"] + [MEAS["entries"][2]])))
    # Invalid UTF-8, long strings, broken JSON.
    base = dumps(MEAS).encode()
    meas_case("meas_utf8_backend", sub(base, b'"backend": "k"', b'"backend": "k\x80"', 1))
    meas_case("meas_utf8_key", sub(base, b'"source"', b'"sou\xc3rce"'))
    entry("meas_long_unit", index=0, unit="u" * 2_000_000)
    entry("meas_long_unknown_key", **{"x" * 1_000_000: 1})
    meas_case("meas_empty", "")
    meas_case("meas_truncated", dumps(MEAS)[:100])
    meas_case("meas_top_array", "[]")


def reports():
    report_with("report_nested_context_200000", raw=deep(200000), extra="@@RAW@@")
    report_with("report_nested_context_object", raw=deep_obj(200000), extra="@@RAW@@")
    report_with("report_nested_quality_200000", raw=deep(200000),
                quality_gates={"k_relative_l2_vs_sage2": 0.01, "deep": "@@RAW@@"})
    report_with("report_nested_timing_200000", raw=deep(200000),
                representative_block_24_p50_milliseconds={"sage2": "@@RAW@@"})
    report_with("report_nested_5000", raw=deep(5000), extra="@@RAW@@")
    # Timing sections of the wrong shape.
    for label, raw in (("array", "[1, 2]"), ("number", "5"), ("string", '"5 ms"'), ("null", "null"),
                       ("true", "true")):
        report_with(f"report_timing_section_{label}", raw=raw, representative_block_24_p50_milliseconds="@@RAW@@")
    report_with("report_timing_backend_array", representative_block_24_p50_milliseconds={"sage2": [1, 2]})
    report_with("report_timing_quantity_string", representative_block_24_p50_milliseconds={"sage2": {"attention": "10"}})
    report_with("report_timing_zero", representative_block_24_p50_milliseconds={"sage2": {"attention": 0}})
    report_with("report_timing_negative", sampling_uninstrumented_two_step_seconds={"sage2": -3})
    report_with("report_timing_empty_backend", representative_block_24_p50_milliseconds={"": {"attention": 5}})
    report_with("report_timing_empty_quantity", representative_block_24_p50_milliseconds={"k": {"": 5}})
    report_with("report_timing_empty_object", representative_block_24_p50_milliseconds={"k": {}})
    report_with("report_timing_unknown_level", warmup_p50_milliseconds={"k": 5})
    for raw in ("1e999", "-1e999", "1e-400", "-1e-400"):
        report_with(f"report_timing_{raw.replace('-', 'm')}", raw=raw,
                    representative_block_24_p50_milliseconds={"sage2": {"attention": "@@RAW@@"}})
        report_with(f"report_quality_{raw.replace('-', 'm')}", raw=raw,
                    quality_gates={"k_relative_l2_vs_sage2": "@@RAW@@"})
    report_with("report_context_1e999", raw="1e999", device="@@RAW@@")
    report_with("report_context_1e-400", raw="[1e-400]", seed="@@RAW@@")
    # Quality figures of the wrong type or impossible.
    report_with("report_quality_string", quality_gates={"k_relative_l2_vs_sage2": "0.01"})
    report_with("report_quality_null", quality_gates={"k_relative_l2_vs_sage2": None})
    report_with("report_quality_object", quality_gates={"k_cosine_vs_exact": {"value": 0.9}})
    report_with("report_quality_timing_string", quality_gates={"k_p50_milliseconds": "5"})
    report_with("report_quality_negative_rel_l2", quality_gates={"k_relative_l2_vs_sage2": -0.01})
    report_with("report_quality_negative_rmse", quality_gates={"k_rmse_vs_exact": -1})
    report_with("report_quality_cosine_3", quality_gates={"k_cosine_vs_exact": 3})
    report_with("report_quality_empty_timing_backend", quality_gates={"_p50_milliseconds": 5})
    report_with("report_quality_long_key", quality_gates={"k" * 1_000_000 + "_relative_l2_vs_sage2": "x"})
    # Duplicates.
    report_with("report_duplicate_measurement",
                block_b_p50_milliseconds={"k": {"attention": 7}})
    text = dumps(REPORT)
    report_case("report_duplicate_top_key", text[:-1] + ', "device": "y"}')
    report_case("report_duplicate_backend_key", sub(text, '"k": {\n   "attention": 5\n  }',
                                                                '"k": {"attention": 5}, "k": {"attention": 6}'))
    report_case("report_duplicate_quality_key", sub(text, '"k_relative_l2_vs_sage2": 0.01',
                                                                '"k_relative_l2_vs_sage2": 0.01, "k_relative_l2_vs_sage2": -1'))
    # Invalid UTF-8, broken JSON, nothing to import.
    b = text.encode()
    report_case("report_utf8_backend", sub(b, b'"sage2": {', b'"sage\xff2": {', 1))
    report_case("report_utf8_value", sub(b, b'"device": "x"', b'"device": "\xf8\x88\x80\x80\x80"'))
    report_case("report_empty", "")
    report_case("report_truncated", text[:len(text) // 2])
    report_case("report_top_array", "[" + text + "]")
    report_case("report_no_figures", dumps({"device": "x"}))
    report_case("report_bom_then_garbage", b"\xef\xbb\xbf\xef\xbb\xbf" + b)


def main():
    global OUT
    if len(sys.argv) != 2:
        sys.exit("usage: gen_json.py OUTDIR")
    OUT = os.path.abspath(sys.argv[1])
    os.makedirs(OUT, exist_ok=True)
    measurements()  # first: writes the base measurements the gate cases use
    gates()
    reports()
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    with open(os.path.join(OUT, "cases.jsonl"), "w") as f:
        for c in CASES:
            f.write(json.dumps(c) + "\n")
    print(f"gen_json: {len(CASES)} cases in {OUT}")


if __name__ == "__main__":
    main()
