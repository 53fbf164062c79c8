// Schedule parsing and printing for the command line and checkpoints.
#include "schedule.hpp"

#include "schedule_scale.hpp"

#include "../core/error.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace ktr {

namespace {

std::int64_t parse_count(std::string const& s, std::string const& text) {
  try {
    std::size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size() && std::isfinite(v) && v >= 0) return v;
  } catch (std::logic_error const&) {
  }
  throw Error("schedule: bad step count '" + s + "' in '" + text + "'");
}

float parse_float(std::string const& s, std::string const& text) {
  try {
    std::size_t used = 0;
    float v = std::stof(s, &used);
    if (used == s.size() && std::isfinite(v) && v >= 0) return v;
  } catch (std::logic_error const&) {
  }
  throw Error("schedule: bad number '" + s + "' in '" + text + "'");
}

}  // namespace

Schedule Schedule::parse(std::string const& text) {
  std::vector<std::string> p;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ':')) p.push_back(part);
  Schedule s;
  if (p.empty()) throw Error("schedule: empty");
  if (p[0] == "constant" && p.size() == 1) return s;
  if (p[0] == "warmup" && p.size() == 2) {
    s.kind = Kind::warmup;
    s.warmup_steps = parse_count(p[1], text);
    return s;
  }
  if (p[0] == "cosine" && p.size() >= 2 && p.size() <= 5) {
    s.kind = Kind::cosine;
    s.decay_steps = parse_count(p[1], text);
    if (p.size() >= 3) s.warmup_steps = parse_count(p[2], text);
    if (p.size() >= 4) s.alpha = parse_float(p[3], text);
    if (p.size() == 5 && p[4] != "periodic")
      throw Error("schedule: '" + p[4] + "' in '" + text + "' is not 'periodic'");
    s.periodic = p.size() == 5;
    if (s.decay_steps == 0) throw Error("schedule: cosine needs decay steps > 0 in '" + text + "'");
    return s;
  }
  if (p[0] == "step" && (p.size() == 2 || p.size() == 3)) {
    s.kind = Kind::step;
    s.step_every = parse_count(p[1], text);
    if (p.size() == 3) s.factor = parse_float(p[2], text);
    if (s.step_every == 0) throw Error("schedule: step needs N > 0 in '" + text + "'");
    return s;
  }
  if (p[0] == "multistep" && (p.size() == 2 || p.size() == 3)) {
    s.kind = Kind::multistep;
    std::stringstream ms(p[1]);
    std::string m;
    while (std::getline(ms, m, ',')) {
      if (s.milestone_count == max_milestones)
        throw Error("schedule: at most " + std::to_string(max_milestones) + " milestones in '" + text + "'");
      std::int64_t const v = parse_count(m, text);
      if (s.milestone_count > 0 && v <= s.milestones[s.milestone_count - 1])
        throw Error("schedule: milestones must increase in '" + text + "'");
      s.milestones[s.milestone_count++] = v;
    }
    if (s.milestone_count == 0) throw Error("schedule: multistep needs milestones in '" + text + "'");
    if (p.size() == 3) s.factor = parse_float(p[2], text);
    return s;
  }
  if (p[0] == "poly" && (p.size() == 2 || p.size() == 3)) {
    s.kind = Kind::polynomial;
    s.total_steps = parse_count(p[1], text);
    if (p.size() == 3) s.power = parse_float(p[2], text);
    if (s.total_steps == 0) throw Error("schedule: poly needs T > 0 in '" + text + "'");
    return s;
  }
  if (p[0] == "linear" && p.size() >= 2 && p.size() <= 4) {
    s.kind = Kind::linear;
    s.total_steps = parse_count(p[1], text);
    if (p.size() >= 3) s.start = parse_float(p[2], text);
    if (p.size() == 4) s.end = parse_float(p[3], text);
    if (s.total_steps == 0) throw Error("schedule: linear needs T > 0 in '" + text + "'");
    return s;
  }
  throw Error(
      "schedule: unknown schedule '" + text +
      "' (constant, warmup:W, cosine:D[:W[:alpha[:periodic]]], step:N[:factor], multistep:M1,M2,...[:factor], "
      "poly:T[:power], linear:T[:start[:end]])");
}

std::string Schedule::str() const {
  std::ostringstream o;
  o.precision(std::numeric_limits<float>::max_digits10);  // parse(str()) gives back the same floats
  switch (kind) {
    case Kind::constant:
      o << "constant";
      break;
    case Kind::warmup:
      o << "warmup:" << warmup_steps;
      break;
    case Kind::cosine:
      o << "cosine:" << decay_steps << ":" << warmup_steps << ":" << alpha << (periodic ? ":periodic" : "");
      break;
    case Kind::step:
      o << "step:" << step_every << ":" << factor;
      break;
    case Kind::multistep:
      o << "multistep:";
      for (int i = 0; i < milestone_count; ++i) o << (i ? "," : "") << milestones[i];
      o << ":" << factor;
      break;
    case Kind::polynomial:
      o << "poly:" << total_steps << ":" << power;
      break;
    case Kind::linear:
      o << "linear:" << total_steps << ":" << start << ":" << end;
      break;
  }
  return o.str();
}

double Schedule::scale(std::int64_t t) const { return schedule_scale(*this, t); }

}  // namespace ktr
