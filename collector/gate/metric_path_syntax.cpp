// ParseMetricPath, FormatMetricPath, EntitySelector and NamesAmount (metric_path.h): the syntax
// of a metric path, apart from resolving one against a report (metric_path.cpp).
#include <algorithm>
#include <cctype>
#include <set>

#include "gate/metric_path.h"

namespace gpuattr::collector {
namespace {

using Json = nlohmann::json;

std::string JsonText(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The end (one past) of the JSON string or array starting at text[start], or npos.
size_t JsonTokenEnd(const std::string& text, size_t start) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[') {
      ++depth;
    } else if (c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string::npos;
}

Status ParseError(const std::string& text, size_t position, const std::string& what) {
  return InvalidArgumentError("metric path '" + text + "': " + what + " at character " +
                              std::to_string(position + 1));
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::vector<std::string> SplitPassPath(const std::string& joined) {
  std::vector<std::string> names;
  size_t start = 0;
  for (;;) {
    const size_t slash = joined.find('/', start);
    names.push_back(joined.substr(start, slash - start));
    if (slash == std::string::npos) return names;
    start = slash + 1;
  }
}

}  // namespace

bool MetricPath::HasWildcard() const {
  return std::any_of(steps.begin(), steps.end(),
                     [](const PathStep& s) { return s.kind == PathStep::Kind::kWildcard; });
}

StatusOr<MetricPath> ParseMetricPath(const std::string& text) {
  MetricPath path;
  size_t i = 0;
  if (text.rfind("summary.", 0) == 0) {
    path.scope = MetricPath::Scope::kSummary;
    i = 8;
  } else if (text.rfind("process[", 0) == 0) {
    const size_t close = text.find(']');
    const std::string inside = close == std::string::npos ? "" : text.substr(8, close - 8);
    const size_t equals = inside.find('=');
    const std::string field = inside.substr(0, equals);
    const std::string id = equals == std::string::npos ? "" : inside.substr(equals + 1);
    if ((field != "rank" && field != "pid") || !AllDigits(id) || id.size() > 18) {
      return ParseError(text, 8, "expected process[rank=N] or process[pid=N]");
    }
    path.scope = field == "rank" ? MetricPath::Scope::kRank : MetricPath::Scope::kPid;
    path.scope_id = std::stoull(id);
    if (close + 1 >= text.size() || text[close + 1] != '.') {
      return ParseError(text, close + 1, "expected '.' after the process selector");
    }
    i = close + 2;
  }
  for (;;) {
    const size_t key_start = i;
    while (i < text.size() && IsIdentifierChar(text[i])) ++i;
    if (i == key_start) return ParseError(text, i, "expected a field name");
    PathStep key;
    key.key = text.substr(key_start, i - key_start);
    path.steps.push_back(key);
    while (i < text.size() && text[i] == '[') {
      PathStep selector;
      const size_t open = i;
      if (i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '[')) {
        const size_t end = JsonTokenEnd(text, i + 1);
        if (end == std::string::npos || end >= text.size() || text[end] != ']') {
          return ParseError(text, open, "unterminated selector");
        }
        const Json token = Json::parse(text.substr(i + 1, end - i - 1), nullptr, false);
        if (token.is_string()) {
          selector.kind = PathStep::Kind::kName;
          selector.key = token.get<std::string>();
        } else if (token.is_array() && !token.empty() &&
                   std::all_of(token.begin(), token.end(),
                               [](const Json& n) { return n.is_string(); })) {
          selector.kind = PathStep::Kind::kPassPath;
          selector.names = token.get<std::vector<std::string>>();
        } else {
          return ParseError(text, open, "a selector must be a JSON string or array of strings");
        }
        i = end + 1;
      } else {
        const size_t close = text.find(']', i);
        if (close == std::string::npos) return ParseError(text, open, "unterminated selector");
        const std::string inside = text.substr(i + 1, close - i - 1);
        if (inside.empty()) return ParseError(text, open, "empty selector");
        if (inside == "*") {
          selector.kind = PathStep::Kind::kWildcard;
        } else if (AllDigits(inside) && inside.size() < 10) {
          selector.kind = PathStep::Kind::kIndex;
          selector.index = std::stoul(inside);
        } else {
          selector.kind = PathStep::Kind::kName;
          selector.key = inside;
        }
        i = close + 1;
      }
      // Under `passes` a name is a pass path.
      if (selector.kind == PathStep::Kind::kName &&
          path.steps.back().kind == PathStep::Kind::kKey && path.steps.back().key == "passes") {
        selector.kind = PathStep::Kind::kPassPath;
        selector.names = SplitPassPath(selector.key);
        selector.key.clear();
      }
      path.steps.push_back(std::move(selector));
    }
    if (i == text.size()) break;
    if (text[i] != '.') return ParseError(text, i, "expected '.', '[' or the end");
    ++i;
  }
  size_t wildcards = 0;
  for (const PathStep& step : path.steps) {
    wildcards += step.kind == PathStep::Kind::kWildcard ? 1 : 0;
  }
  if (wildcards > 1) return ParseError(text, 0, "at most one [*] per path");
  return path;
}

std::string FormatMetricPath(const MetricPath& path) {
  std::string text;
  switch (path.scope) {
    case MetricPath::Scope::kDefault:
      break;
    case MetricPath::Scope::kSummary:
      text = "summary.";
      break;
    case MetricPath::Scope::kRank:
      text = "process[rank=" + std::to_string(path.scope_id) + "].";
      break;
    case MetricPath::Scope::kPid:
      text = "process[pid=" + std::to_string(path.scope_id) + "].";
      break;
  }
  for (size_t i = 0; i < path.steps.size(); ++i) {
    const PathStep& step = path.steps[i];
    switch (step.kind) {
      case PathStep::Kind::kKey:
        text += (i == 0 ? "" : ".") + step.key;
        break;
      case PathStep::Kind::kIndex:
        text += "[" + std::to_string(step.index) + "]";
        break;
      case PathStep::Kind::kName:
        text += "[" + JsonText(step.key) + "]";
        break;
      case PathStep::Kind::kWildcard:
        text += "[*]";
        break;
      case PathStep::Kind::kPassPath: {
        const bool slash_in_name =
            std::any_of(step.names.begin(), step.names.end(),
                        [](const std::string& n) { return n.find('/') != std::string::npos; });
        if (slash_in_name) {
          text += "[" + JsonText(step.names) + "]";
        } else {
          std::string joined;
          for (const std::string& n : step.names) joined += (joined.empty() ? "" : "/") + n;
          text += "[" + JsonText(joined) + "]";
        }
        break;
      }
    }
  }
  return text;
}

std::optional<size_t> EntitySelector(const MetricPath& path) {
  const std::vector<PathStep>& steps = path.steps;
  const auto key_is = [](const PathStep& step, const char* key) {
    return step.kind == PathStep::Kind::kKey && step.key == key;
  };
  for (size_t i = 1; i < steps.size(); ++i) {
    if ((key_is(steps[i - 1], "families") && steps[i].kind == PathStep::Kind::kName) ||
        (key_is(steps[i - 1], "passes") && steps[i].kind == PathStep::Kind::kPassPath)) {
      return i;
    }
  }
  return std::nullopt;
}

bool NamesAmount(const MetricPath& path, size_t selector) {
  static const std::set<std::string> kAmounts = {"kernels",        "activities",
                                                 "instances",      "share",
                                                 "total_ns",       "self_ns",
                                                 "busy_ns",        "direct_ns",
                                                 "inherited_ns",   "captured_ns",
                                                 "flops",          "flops_total",
                                                 "bytes_estimate", "bytes_estimate_total",
                                                 "unknown_ops",    "unknown_ops_total"};
  const std::vector<PathStep>& steps = path.steps;
  for (size_t i = selector + 1; i < steps.size(); ++i) {
    if (steps[i].kind != PathStep::Kind::kKey) return false;
  }
  return steps.size() > selector + 1 && kAmounts.count(steps.back().key) > 0;
}

}  // namespace gpuattr::collector
