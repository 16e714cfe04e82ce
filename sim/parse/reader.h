// ObjectReader: reads the fields of one JSON object into a plain struct, checking types, ranges
// and units, and reporting every problem with the field's JSON pointer. Each key the reader is
// asked about becomes "known"; finish() reports the keys that nobody asked about as unknown, with
// the closest known key as a suggestion — so a misspelled key is never silently ignored.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/time.h"
#include "sim/parse/diagnostics.h"
#include "sim/parse/json.h"
#include "sim/parse/registry.h"
#include "sim/parse/units.h"

namespace arlsim::parse {

enum class Presence { required, optional };

template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};

class ObjectReader {
 public:
  // Reports "expected an object" when `v` is not one; then every read is a no-op.
  ObjectReader(const Value& v, std::string pointer, Diagnostics& diag);
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  bool is_object() const { return object_; }
  const Value& value() const { return v_; }
  const std::string& pointer() const { return pointer_; }
  Diagnostics& diag() const { return diag_; }
  std::string pointer_of(std::string_view key) const { return pointer_append(pointer_, key); }

  // Marks `key` as known and returns its value, or nullptr (reporting when required).
  const Value* field(std::string_view key, Presence p = Presence::optional);
  bool has(std::string_view key) const { return v_.is_object() && v_.find(key) != nullptr; }
  // Like field(), but nullptr also for a value already reported as unusable (see Value::unresolved).
  const Value* usable(std::string_view key, Presence p = Presence::optional);
  // Marks keys as known without reading them (fields read by another pass).
  void accept(std::initializer_list<std::string_view> keys);

  // Each returns true when the field was present and valid; `out` is left untouched otherwise.
  bool read(std::string_view key, int64_t& out, Presence p, int64_t lo = std::numeric_limits<int64_t>::min(),
            int64_t hi = std::numeric_limits<int64_t>::max());
  bool read(std::string_view key, int& out, Presence p, int lo = std::numeric_limits<int>::min(),
            int hi = std::numeric_limits<int>::max());
  bool read(std::string_view key, double& out, Presence p, double lo = -1e300, double hi = 1e300);
  bool read(std::string_view key, bool& out, Presence p);
  bool read(std::string_view key, std::string& out, Presence p);
  // A file's path, relative to the folder of the file that names it, normalised; an error names a
  // folder or a path with no file (`what`: "trace file"). True when it was present, whether or
  // not the file is there.
  bool read_file_path(std::string_view key, std::string& out, Presence p, std::string_view what);
  // A quantity: a string with a unit, or a plain number in the dimension's base unit.
  bool read_quantity(std::string_view key, Dimension dim, double& out, Presence p, double lo = 0,
                     double hi = 1e300);
  bool read_duration(std::string_view key, SimTime& out, Presence p, double lo_s = 0, double hi_s = 1e9);

  template <typename E, size_t N>
  bool read_enum(std::string_view key, E& out, Presence p, const EnumName<E> (&names)[N]) {
    const Value* v = usable(key, p);
    if (!v) return false;
    std::vector<std::string> valid;
    for (const auto& n : names) {
      if (v->is_string() && v->as_string() == n.name) {
        out = n.value;
        return true;
      }
      valid.emplace_back(n.name);
    }
    report_bad_enum(*v, key, valid);
    return false;
  }

  // A name from a registry of choices (see registry.h).
  template <typename T>
  bool read_choice(std::string_view key, T& out, Presence p, const Registry<T>& registry) {
    const Value* v = usable(key, p);
    if (!v) return false;
    if (v->is_string())
      if (const Choice<T>* c = registry.find(v->as_string())) {
        out = c->value;
        return true;
      }
    report_bad_enum(*v, key, registry.names());
    return false;
  }

  // Calls fn(reader, index) for each element of the array at `key`, each read as an object
  // (fn calls finish()); reports a non-array. Does nothing when the key is absent.
  template <typename F>
  void for_each_object(std::string_view key, F&& fn) {
    const Value* v = usable(key);
    if (!v) return;
    if (!v->is_array()) {
      error(key, "expected an array of objects, got " + v->describe());
      return;
    }
    for (size_t i = 0; i < v->items().size(); ++i) {
      ObjectReader item(v->items()[i], pointer_append(pointer_of(key), i), diag_);
      if (item.is_object()) fn(item, i);
    }
  }

  // Reports every key that was never asked about.
  void finish();
  // For published third-party formats (Hugging Face config.json): other keys are allowed.
  void finish_ignoring_unknown() { finished_ = true; }
  // Says, before reading, that keys nobody asks for will be allowed: a required key then missing
  // names a key beside it that looks like a slip of it (the unknown-key check cannot).
  void allow_unknown_keys() { lenient_ = true; }
  // finish(), but keys written in `file` (the published document itself) may be unknown: those a
  // document extending it adds, or --set, may not.
  void finish_allowing_unknown_from(const SourceFile* file);

  void error(std::string_view key, std::string message, std::string hint = {});
  // An error about two fields together, reported at `key` unless a preset gave `key` and the user
  // wrote `other`: then at `other`, which is what the user changed.
  void error_between(std::string_view key, std::string_view other, std::string message, std::string hint = {});
  // A key the format names but the simulator does not model: an error saying why, when present,
  // rather than a value accepted and then ignored.
  void reject(std::string_view key, const std::string& why, std::string hint = {});
  void error_here(std::string message, std::string hint = {});

 private:
  void report_bad_enum(const Value& v, std::string_view key, const std::vector<std::string>& valid);
  void report_type(const Value& v, std::string_view key, std::string_view expected);

  const Value& v_;
  std::string pointer_;
  Diagnostics& diag_;
  bool object_ = false;
  bool finished_ = false;
  bool lenient_ = false;
  std::vector<std::string> known_;
};

// Reads one integer value (not a field): for array elements.
bool read_int_value(const Value& v, std::string_view pointer, Diagnostics& diag, int64_t& out, int64_t lo,
                    int64_t hi);

}  // namespace arlsim::parse
