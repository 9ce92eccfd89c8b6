#pragma once
// Attention maps a user brings (spec: geometry.md, "Files"), one JSON file:
//   {"maps": [{"layer": 0, "head": 0, "query": t,
//              "alpha": [α_0, ..., α_t],
//              "values": [[v_0 ...], ..., [v_t ...]],
//              "sink": 0}, ...]}
// `alpha` holds one weight per visible source 0..t (t + 1 entries, finite, >= 0); `values` one
// vector per visible source, all of one width (any width >= 1); `sink` is optional (default: the
// analysis' `sink` setting). Optional `"document": k` (integer >= 0) groups maps of one input
// sequence, so that uncertainties are bootstrapped over documents; without it every map is its
// own unit. Other keys are rejected (a typo must not pass silently).
#include <Eigen/Dense>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hdat::geometry {

struct AttentionMap {
  int layer = 0, head = 0, query = 0;
  Eigen::VectorXd alpha;   ///< t + 1 weights
  Eigen::MatrixXd values;  ///< width × (t + 1): column i = v_i
  int sink = -1;           ///< -1: not given in the file
  long document = -1;      ///< -1: not given in the file
};

/// Parse the document (InputError naming `where` and the map index on any violation).
std::vector<AttentionMap> parse_maps(const nlohmann::json& doc, const std::string& where = "--maps");
/// Read and parse a file (InputError("--maps", ...) if unreadable or malformed).
std::vector<AttentionMap> read_maps(const std::string& path);
/// The JSON document of `maps` in the same format (for exporting maps from hdat's own models).
nlohmann::json maps_to_json(const std::vector<AttentionMap>& maps);

}  // namespace hdat::geometry
