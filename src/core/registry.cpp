#include "hdat/core/registry.hpp"

#include "hdat/core/error.hpp"
#include "hdat/core/suggest.hpp"

namespace hdat {

void Registry::add(ModelEntry entry) {
  if (find(entry.name)) throw std::logic_error("model registered twice: " + entry.name);
  entries_.push_back(std::make_unique<ModelEntry>(std::move(entry)));
}

const ModelEntry* Registry::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e->name == name) return e.get();
  return nullptr;
}

const ModelEntry& Registry::get(const std::string& name) const {
  if (const ModelEntry* e = find(name)) return *e;
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e->name);
  throw InputError("MODEL", "unknown model '" + name + "'" + did_you_mean_among(name, names, "available"));
}

std::vector<const ModelEntry*> Registry::all() const {
  std::vector<const ModelEntry*> out;
  for (const auto& e : entries_) out.push_back(e.get());
  return out;
}

Registry& registry() {
  static Registry r;
  return r;
}

Params resolve_for(const ModelEntry& model, const nlohmann::json& config,
                   const std::vector<std::pair<std::string, nlohmann::json>>& assignments) {
  Params p = resolve(model.params, config, assignments);
  if (model.check) model.check(p);
  return p;
}

}  // namespace hdat
