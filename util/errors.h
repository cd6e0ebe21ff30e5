// The one form of the library's messages, for every layer and component: what a user reads
// first says which part of mploader is speaking, what happened (with the numbers) and what to
// do, in that order and in the same words, whoever throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mploader::detail {

// "mploader: <who>: <what>. <fix>." `who` is the class, function or option speaking
// ("TokenStream", "tune", "ConcatDataset::get"); empty leaves it out. `what` is what happened,
// with the numbers; `fix` is a sentence saying what to do, empty when nothing can be done.
// A full stop already ending `what` or `fix` is not doubled.
std::string message(std::string_view who, std::string_view what, std::string_view fix);

// `s` between double quotes: a path or name inside a message. Not "quoted": std::quoted would
// win overload resolution through argument-dependent lookup for a non-const std::string.
inline std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

// Names one after another with ", " between them: a list inside a message ("a, b, c").
std::string comma_list(const std::vector<std::string>& names);

}  // namespace mploader::detail
