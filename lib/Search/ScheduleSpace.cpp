//===- ScheduleSpace.cpp - schedules as JSON
//--------------------------------===//

#include "ign/Search/ScheduleSpace.h"

#include <nlohmann/json.hpp>

namespace ign::search {

std::string scheduleToJson(const Schedule &schedule) {
  return nlohmann::json(schedule).dump();
}

std::optional<Schedule> scheduleFromJson(const std::string &text,
                                         std::string *error) {
  auto fail = [&](const std::string &why) -> std::optional<Schedule> {
    if (error)
      *error = why;
    return std::nullopt;
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("a schedule is a JSON object of knob values");
  Schedule s;
  for (auto &[name, value] : j.items()) {
    if (!value.is_number_integer())
      return fail("knob '" + name + "' is not an integer");
    s[name] = value.get<int64_t>();
  }
  return s;
}

} // namespace ign::search
