// RenderGateTable, RenderGateMarkdown, RenderGateJunit and GateOutcomeJson (gate.h): the
// outcome of a gate for people (terminal, markdown) and for CI (JUnit, JSON), escaped for each.
#include <algorithm>
#include <string>
#include <vector>

#include "gate/gate.h"
#include "report/report_json.h"
#include "views/text.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : SanitizedText(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A markdown table cell: no line breaks, no cell separators, no raw HTML.
std::string MarkdownCell(const std::string& text, bool code) {
  std::string out;
  for (char c : SanitizedText(text)) {
    if (c == '|') {
      out += "\\|";
    } else if (code && c == '`') {
      out += '\'';
    } else if (!code && c == '<') {
      out += "&lt;";
    } else if (!code && c == '>') {
      out += "&gt;";
    } else if (!code && c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return code ? "`" + out + "`" : out;
}

std::string OptionalValue(const std::string& metric, const std::optional<double>& value) {
  return value ? FormatMetricValue(metric, *value) : kNotMeasured;
}

// "pass", "FAIL" or "n/a" (not applicable).
std::string Verdict(const Check& check) {
  if (!check.applicable) return kNotMeasured;
  return check.passed ? "pass" : "FAIL";
}

std::string Summary(const GateOutcome& outcome) {
  const size_t not_applicable = outcome.NotApplicable();
  return std::to_string(outcome.checks.size()) + " checks, " + std::to_string(outcome.Failures()) +
         " failed" +
         (not_applicable > 0 ? ", " + std::to_string(not_applicable) + " not applicable" : "") +
         "; alpha = " + Formatted("%g", outcome.alpha) + "; rules: " + outcome.rules_source +
         (outcome.default_deny ? " (default deny)" : "");
}

}  // namespace

std::string RenderGateTable(const GateOutcome& outcome) {
  TextTable table(
      "",
      {{"VERDICT", true}, {"METRIC", true}, {"VALUE", true}, {"BASELINE", true}, {"BOUND", true}});
  for (const Check& check : outcome.checks) {
    table.Add({Verdict(check), SanitizedText(check.metric),
               OptionalValue(check.metric, check.value),
               OptionalValue(check.metric, check.baseline), SanitizedText(check.bound)});
    table.AddText("    " + SanitizedText(check.rule) + ": [" + check.method + "] " +
                  SanitizedText(check.why));
  }
  std::string out = std::string("gpuattr gate: ") + (outcome.Passed() ? "pass" : "FAIL") + " (" +
                    Summary(outcome) + ")\n\n" + table.Render();
  for (const std::string& note : outcome.notes) out += "note: " + SanitizedText(note) + "\n";
  return out;
}

std::string RenderGateMarkdown(const GateOutcome& outcome) {
  std::string out = std::string("## gpuattr gate: ") + (outcome.Passed() ? "pass" : "**FAIL**") +
                    "\n\n" + Summary(outcome) +
                    "\n\n| Verdict | Rule | Metric | Value | Baseline | Bound | Method | Why |\n"
                    "|---|---|---|---|---|---|---|---|\n";
  // Failed checks first: a reviewer reads the top of the comment.
  std::vector<const Check*> ordered;
  for (const Check& check : outcome.checks) ordered.push_back(&check);
  std::stable_partition(ordered.begin(), ordered.end(),
                        [](const Check* check) { return !check->passed; });
  for (const Check* check_pointer : ordered) {
    const Check& check = *check_pointer;
    const std::string verdict = Verdict(check);
    out += "| " + (verdict == "FAIL" ? "**FAIL**" : verdict) + " | " +
           MarkdownCell(check.rule, false) + " | " + MarkdownCell(check.metric, true) + " | " +
           MarkdownCell(OptionalValue(check.metric, check.value), false) + " | " +
           MarkdownCell(OptionalValue(check.metric, check.baseline), false) + " | " +
           MarkdownCell(check.bound, false) + " | " + MarkdownCell(check.method, false) + " | " +
           MarkdownCell(check.why, false) + " |\n";
  }
  if (!outcome.notes.empty()) {
    out += "\nNotes:\n\n";
    for (const std::string& note : outcome.notes) out += "- " + MarkdownCell(note, false) + "\n";
  }
  return out;
}

std::string RenderGateJunit(const GateOutcome& outcome) {
  std::string counts = "tests=\"" + std::to_string(outcome.checks.size()) + "\" failures=\"" +
                       std::to_string(outcome.Failures()) + "\" errors=\"0\"";
  if (outcome.duration_ns) counts += Formatted(" time=\"%.3f\"", *outcome.duration_ns / 1e9);
  // JUnit's timestamp: ISO 8601 without a zone (the Jenkins xunit schema's pattern); UTC.
  const std::string timestamp =
      outcome.started_realtime_ns
          ? " timestamp=\"" + UtcSeconds(*outcome.started_realtime_ns, "%Y-%m-%dT%H:%M:%S") + "\""
          : "";
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gpuattr gate\" " + counts +
      ">\n  <testsuite name=\"gpuattr gate\" " + counts + timestamp + " skipped=\"" +
      std::to_string(outcome.NotApplicable()) + "\">\n";
  for (const Check& check : outcome.checks) {
    out += "    <testcase classname=\"gpuattr.gate\" name=\"" +
           XmlEscape(check.rule + ": " + check.metric + " " + check.bound) + "\">\n";
    const std::string detail = "value " + OptionalValue(check.metric, check.value) + ", baseline " +
                               OptionalValue(check.metric, check.baseline) + "; " + check.method;
    if (!check.applicable) {
      out += "      <skipped message=\"" + XmlEscape("not applicable: " + check.why) + "\"/>\n";
    } else if (check.passed) {
      out += "      <system-out>" + XmlEscape(check.why + " (" + detail + ")") + "</system-out>\n";
    } else {
      out += "      <failure type=\"regression\" message=\"" + XmlEscape(check.why) + "\">" +
             XmlEscape(detail) + "</failure>\n";
    }
    out += "    </testcase>\n";
  }
  if (!outcome.notes.empty()) {
    std::string notes;
    for (const std::string& note : outcome.notes) notes += note + "\n";
    out += "    <system-out>" + XmlEscape(notes) + "</system-out>\n";
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

nlohmann::json GateOutcomeJson(const GateOutcome& outcome) {
  const auto optional = [](const std::optional<double>& value) {
    return value ? Json(*value) : Json(nullptr);
  };
  Json checks = Json::array();
  for (const Check& check : outcome.checks) {
    checks.push_back(
        {{"rule", check.rule},
         {"metric", check.metric},
         {"bound", check.bound},
         {"value", optional(check.value)},
         {"baseline", optional(check.baseline)},
         {"verdict", !check.applicable ? "not_applicable"
                     : check.passed    ? "pass"
                                       : "fail"},
         {"method", check.method},
         {"why", check.why},
         {"p_value", optional(check.p_value)},
         {"median", optional(check.median)},
         {"baseline_median", optional(check.baseline_median)},
         {"steps", check.median ? Json(check.steps) : Json(nullptr)},
         {"baseline_steps", check.median ? Json(check.baseline_steps) : Json(nullptr)}});
  }
  return {{"schema_version", "gpuattr.gate-result/1"},
          {"verdict", outcome.Passed() ? "pass" : "fail"},
          {"checks_total", outcome.checks.size()},
          {"checks_failed", outcome.Failures()},
          {"checks_not_applicable", outcome.NotApplicable()},
          {"alpha", outcome.alpha},
          {"default_deny", outcome.default_deny},
          {"rules", outcome.rules_source},
          {"checks", checks},
          {"notes", outcome.notes}};
}

}  // namespace gpuattr::collector
