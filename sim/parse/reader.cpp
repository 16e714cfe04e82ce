#include "sim/parse/reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "sim/core/assert.h"

namespace arlsim::parse {
namespace {

std::string number_text(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

std::string range_text(double lo, double hi) {
  const bool has_lo = lo > -1e299 && lo != static_cast<double>(std::numeric_limits<int64_t>::min());
  const bool has_hi = hi < 1e299 && hi != static_cast<double>(std::numeric_limits<int64_t>::max());
  if (has_lo && has_hi) return "between " + number_text(lo) + " and " + number_text(hi);
  if (has_lo) return "at least " + number_text(lo);
  if (has_hi) return "at most " + number_text(hi);
  return "";
}

}  // namespace

bool read_int_value(const Value& v, std::string_view pointer, Diagnostics& diag, int64_t& out, int64_t lo,
                    int64_t hi) {
  if (v.unresolved()) return false;
  if (!v.is_number() || !v.is_integer_literal()) {
    diag.error(v, pointer, "expected an integer, got " + v.describe());
    return false;
  }
  if (!v.is_int64() || v.as_int64() < lo || v.as_int64() > hi) {
    diag.error(v, pointer,
               "expected an integer " + range_text(static_cast<double>(lo), static_cast<double>(hi)) + ", got " +
                   v.literal());
    return false;
  }
  out = v.as_int64();
  return true;
}

ObjectReader::ObjectReader(const Value& v, std::string pointer, Diagnostics& diag)
    : v_(v), pointer_(std::move(pointer)), diag_(diag), object_(v.is_object()) {
  if (!object_) {
    if (!v_.unresolved()) diag_.error(v_, pointer_, "expected an object, got " + v_.describe());
    finished_ = true;
  }
}

const Value* ObjectReader::field(std::string_view key, Presence p) {
  if (!object_) return nullptr;
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  const Value* f = v_.find(key);
  if (!f && p == Presence::required) {
    // A key beside it that looks like a slip of it (a Hugging Face config keeps keys arlsim does
    // not read, so the misspelling would otherwise go unremarked).
    std::string near;
    if (lenient_)
      for (const auto& m : v_.members())
        if (m.key.size() >= 4 && edit_distance(m.key, key) <= 2 && (near.empty() || edit_distance(m.key, key) < edit_distance(near, key)))
          near = m.key;
    diag_.error(v_, pointer_.empty() ? std::string() : pointer_, "missing required key " + quote(key),
                near.empty() ? std::string() : quote(near) + " is here: did you mean " + quote(key) + "?");
  }
  return f;
}

const Value* ObjectReader::usable(std::string_view key, Presence p) {
  const Value* f = field(key, p);
  return f && !f->unresolved() ? f : nullptr;
}

void ObjectReader::accept(std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (std::find(known_.begin(), known_.end(), k) == known_.end()) known_.emplace_back(k);
}

void ObjectReader::report_type(const Value& v, std::string_view key, std::string_view expected) {
  diag_.error(v, pointer_of(key), "expected " + std::string(expected) + ", got " + v.describe());
}

bool ObjectReader::read(std::string_view key, int64_t& out, Presence p, int64_t lo, int64_t hi) {
  const Value* v = usable(key, p);
  if (!v) return false;
  return read_int_value(*v, pointer_of(key), diag_, out, lo, hi);
}

bool ObjectReader::read(std::string_view key, int& out, Presence p, int lo, int hi) {
  int64_t wide = 0;
  if (!read(key, wide, p, lo, hi)) return false;
  out = static_cast<int>(wide);
  return true;
}

bool ObjectReader::read(std::string_view key, double& out, Presence p, double lo, double hi) {
  const Value* v = usable(key, p);
  if (!v) return false;
  if (!v->is_number()) {
    report_type(*v, key, "a number");
    return false;
  }
  const double d = v->as_double();
  if (d < lo || d > hi) {
    diag_.error(*v, pointer_of(key), "expected a number " + range_text(lo, hi) + ", got " + v->literal());
    return false;
  }
  out = d;
  return true;
}

bool ObjectReader::read(std::string_view key, bool& out, Presence p) {
  const Value* v = usable(key, p);
  if (!v) return false;
  if (!v->is_bool()) {
    report_type(*v, key, "true or false");
    return false;
  }
  out = v->as_bool();
  return true;
}

bool ObjectReader::read_file_path(std::string_view key, std::string& out, Presence p, std::string_view what) {
  if (!read(key, out, p)) return false;
  std::filesystem::path path(out);
  if (const Value* v = field(key); v && v->file() && path.is_relative())
    path = std::filesystem::path(v->file()->directory) / path;
  out = path.lexically_normal().string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) error(key, quote(out) + " is a directory, not a " + std::string(what));
  else if (!std::filesystem::is_regular_file(path, ec)) error(key, "no such " + std::string(what) + " " + quote(out));
  return true;
}

bool ObjectReader::read(std::string_view key, std::string& out, Presence p) {
  const Value* v = usable(key, p);
  if (!v) return false;
  if (!v->is_string()) {
    report_type(*v, key, "a string");
    return false;
  }
  out = v->as_string();
  return true;
}

bool ObjectReader::read_quantity(std::string_view key, Dimension dim, double& out, Presence p, double lo,
                                 double hi) {
  const Value* v = usable(key, p);
  if (!v) return false;
  double value = 0;
  if (v->is_number()) {
    value = v->as_double();
  } else if (v->is_string()) {
    const ParsedQuantity q = parse_quantity(v->as_string(), dim);
    if (!q.error.empty()) {
      diag_.error(*v, pointer_of(key), q.error, std::string(unit_examples(dim)));
      return false;
    }
    value = q.value;
  } else {
    diag_.error(*v, pointer_of(key), "expected a quantity in " + std::string(base_unit_name(dim)) + ", got " +
                                         v->describe(),
                std::string(unit_examples(dim)));
    return false;
  }
  if (!(value >= lo && value <= hi)) {
    diag_.error(*v, pointer_of(key),
                "expected a value " + range_text(lo, hi) + " " + std::string(base_unit_name(dim)) + ", got " +
                    (v->is_string() ? quote(v->as_string()) + " = " + number_text(value) + " " +
                                          std::string(base_unit_name(dim))
                                    : v->literal()));
    return false;
  }
  out = value;
  return true;
}

bool ObjectReader::read_duration(std::string_view key, SimTime& out, Presence p, double lo_s, double hi_s) {
  double seconds = 0;
  if (!read_quantity(key, Dimension::seconds, seconds, p, lo_s, hi_s)) return false;
  out = SimTime::from_seconds(seconds);
  return true;
}

void ObjectReader::report_bad_enum(const Value& v, std::string_view key, const std::vector<std::string>& valid) {
  if (!v.is_string()) {
    diag_.error(v, pointer_of(key), "expected one of " + join_quoted(valid) + ", got " + v.describe());
    return;
  }
  const std::string guess = closest_match(v.as_string(), valid);
  diag_.error(v, pointer_of(key), "unknown value " + quote(v.as_string()) + "; expected one of " + join_quoted(valid),
              guess.empty() ? std::string() : "did you mean " + quote(guess) + "?");
}

void ObjectReader::finish() { finish_allowing_unknown_from(nullptr); }

void ObjectReader::finish_allowing_unknown_from(const SourceFile* file) {
  if (finished_) return;
  finished_ = true;
  for (const auto& m : v_.members()) {
    if (std::find(known_.begin(), known_.end(), m.key) != known_.end()) continue;
    if (file && m.value->file().get() == file) continue;
    const std::string guess = closest_match(m.key, known_);
    Diagnostic d;
    d.file = m.value->file() ? m.value->file()->display_name : std::string();
    d.pos = m.key_pos;
    d.pointer = pointer_of(m.key);
    d.message = "unknown key " + quote(m.key);
    d.hint = guess.empty() ? "valid keys here: " + join_quoted(known_, ", ") : "did you mean " + quote(guess) + "?";
    diag_.add(std::move(d));
  }
}

void ObjectReader::error(std::string_view key, std::string message, std::string hint) {
  const Value* v = object_ ? v_.find(key) : nullptr;
  diag_.error(v ? *v : v_, v ? pointer_of(key) : pointer_, std::move(message), std::move(hint));
}

void ObjectReader::error_between(std::string_view key, std::string_view other, std::string message, std::string hint) {
  auto from_preset = [&](std::string_view k) {
    const Value* v = object_ ? v_.find(k) : nullptr;
    return !v || (v->file() && v->file()->is_preset);
  };
  error(from_preset(key) && !from_preset(other) ? other : key, std::move(message), std::move(hint));
}

void ObjectReader::reject(std::string_view key, const std::string& why, std::string hint) {
  if (field(key)) error(key, std::string(key) + " is not modelled: " + why, std::move(hint));
}

void ObjectReader::error_here(std::string message, std::string hint) {
  diag_.error(v_, pointer_, std::move(message), std::move(hint));
}

}  // namespace arlsim::parse
