#pragma once
// "Did you mean" for names a user types (a gate, a backend key, a segment
// kind): the known name closest in edits, when it is close enough to be the
// name meant rather than another word.
#include <optional>
#include <string>
#include <vector>

namespace ts {

// Levenshtein distance (insertions, deletions, substitutions; an exchange
// of neighbours counts one, as typing mistakes go).
size_t edit_distance(const std::string& a, const std::string& b);

// The known name nearest `typed`, when at most a third of its letters (at
// least one, at most three) need changing (ties go to the first listed);
// else the one known name that `typed` begins ("vid" -> "video").
std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known);

// "did you mean 'X'? " or "", to put before the list of what exists.
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known);

// "a, b, c"
std::string join_names(const std::vector<std::string>& names, const std::string& sep = ", ");

}  // namespace ts
