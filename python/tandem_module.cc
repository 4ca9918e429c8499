// The `tandem` Python module (pybind11): plan, sim and compare in the calling process, each
// returning the object its program prints with --json (json.loads of the same text), so that
// notebooks and sweeps need no subprocess.
//
//   import tandem
//   p = tandem.plan("scenarios/tiny-gpt.textproto", ["cluster.gpus=4", "strategy.tp=2"])
//   s = tandem.sim("scenarios/tiny-gpt.textproto", {"cluster.gpus": 4, "strategy.tp": 2})
//   c = tandem.compare("predicted.trace", "measured.trace")
//
// Overrides are --set assignments: a list of "part.field=value" strings, or a dict of
// {"part.field": value} (True/False written true/false). Errors raise tandem.Error, a ValueError
// whose args are (message, exit code of the program: 2 bad input, 3 out of memory, 4 stalled,
// 1 internal); sim's estimates of memory and wall time refuse a run as `tandem sim` does.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <vector>

#include "shared/error.h"
#include "shared/plan_report.h"
#include "shared/plan_summary.h"
#include "shared/program_size.h"
#include "shared/resource_limit.h"
#include "shared/scenario.h"
#include "shared/schedule.h"
#include "sim/compute_cost_model.h"
#include "sim/sim_memory_estimate.h"
#include "sim/sim_report.h"
#include "sim/sim_time_estimate.h"
#include "sim/simulation.h"
#include "traces/report/compare.h"
#include "traces/trace_io.h"

namespace py = pybind11;

namespace {

// --set assignments from a list of strings or a dict.
std::vector<std::string> overrides(const py::object& sets) {
  std::vector<std::string> out;
  if (sets.is_none()) return out;
  if (py::isinstance<py::dict>(sets)) {
    for (const auto& [key, value] : sets.cast<py::dict>()) {
      std::string v;
      if (py::isinstance<py::bool_>(value)) v = value.cast<bool>() ? "true" : "false";
      else v = py::str(value).cast<std::string>();
      out.push_back(py::str(key).cast<std::string>() + "=" + v);
    }
    return out;
  }
  if (py::isinstance<py::str>(sets))
    throw tandem::Error("overrides: expected a list of \"part.field=value\" strings or a dict, got one string");
  for (const py::handle item : sets) {
    if (!py::isinstance<py::str>(item))
      throw tandem::Error("overrides: every item must be a \"part.field=value\" string");
    out.push_back(item.cast<std::string>());
  }
  return out;
}

tandem::ResourceLimit limit_of(const py::object& max_memory_gib) {
  tandem::ResourceLimit limit;
  if (!max_memory_gib.is_none()) {
    const double gib = max_memory_gib.cast<double>();
    if (!(gib > 0)) throw tandem::Error("max_memory_gib: expected a positive size in GiB");
    limit.max_memory_bytes = static_cast<int64_t>(gib * 1073741824.0);
  }
  limit.flag = "max_memory_gib";
  return limit;
}

py::object loads(const std::string& json) { return py::module_::import("json").attr("loads")(json); }

py::object plan(const std::string& scenario_path, const py::object& sets, const py::object& max_memory_gib) {
  const std::vector<std::string> assignments = overrides(sets);
  const tandem::ResourceLimit limit = limit_of(max_memory_gib);
  std::ostringstream out;
  {
    py::gil_scoped_release unlocked;
    tandem::Scenario scenario = tandem::load_scenario(scenario_path, assignments);
    tandem::check_program_memory(scenario, tandem::plan_bytes_per_task(scenario), "tandem.plan", limit);
    const tandem::Schedule schedule(std::move(scenario));
    tandem::print_plan_json(out, schedule, tandem::summarize(schedule));
  }
  return loads(out.str());
}

py::object sim(const std::string& scenario_path, const py::object& sets, const std::string& algorithm,
               const std::string& protocol, bool ideal_network, const std::string& calibration, const std::string& trace,
               const py::object& max_memory_gib, const std::string& max_time) {
  namespace sim = tandem::sim;
  const std::vector<std::string> assignments = overrides(sets);
  tandem::ResourceLimit limit = limit_of(max_memory_gib);
  sim::SimOptions o;
  if (algorithm == "ring") o.algorithm = sim::Algorithm::kRing;
  else if (algorithm == "tree") o.algorithm = sim::Algorithm::kTree;
  else if (algorithm != "auto") throw tandem::Error("algorithm: expected auto, ring or tree, got '" + algorithm + "'");
  if (protocol == "LL") o.protocol = sim::Protocol::kLL;
  else if (protocol == "LL128") o.protocol = sim::Protocol::kLL128;
  else if (protocol == "Simple") o.protocol = sim::Protocol::kSimple;
  else if (protocol != "auto") throw tandem::Error("protocol: expected auto, LL, LL128 or Simple, got '" + protocol + "'");
  o.ideal_network = ideal_network;
  o.trace_path = trace;
  o.isolate = true;  // SimGrid runs once per process: every call simulates in a forked child
  limit.max_time_s = sim::parse_duration(max_time, "max_time");
  std::ostringstream out;
  {
    py::gil_scoped_release unlocked;
    if (!calibration.empty())
      o.calibration = std::make_shared<sim::CalibrationTable>(sim::CalibrationTable::load(calibration));
    const tandem::Schedule schedule(tandem::load_scenario(scenario_path, assignments));
    const sim::SimWork work = sim::count_sim_work(schedule, o);
    const sim::MemoryEstimate need = sim::estimate_memory(work, !o.trace_path.empty(), false);
    tandem::check_memory_estimate(need.bytes, "tandem.sim", need.how, limit);
    sim::check_time_estimate(sim::estimate_time(work, o), "tandem.sim", limit);
    if (!o.algorithm) {
      const tandem::CollectiveAlgorithm a = schedule.scenario().strategy.collective_algorithm;
      if (a == tandem::CollectiveAlgorithm::kRing) o.algorithm = sim::Algorithm::kRing;
      if (a == tandem::CollectiveAlgorithm::kTree) o.algorithm = sim::Algorithm::kTree;
    }
    sim::write_json(out, schedule, sim::simulate(schedule, o));
  }
  return loads(out.str());
}

py::object compare(const std::string& a_path, const std::string& b_path, bool allow_different_scenarios) {
  std::string json;
  {
    py::gil_scoped_release unlocked;
    const tandem::proto::Trace a = tandem::read_trace(a_path);
    const tandem::proto::Trace b = tandem::read_trace(b_path);
    tandem::CompareOptions options;
    options.allow_different_scenarios = allow_different_scenarios;
    options.name_a = a_path;
    options.name_b = b_path;
    json = tandem::comparison_json(tandem::compare_traces(a, b, options));
  }
  return loads(json);
}

}  // namespace

PYBIND11_MODULE(tandem, m) {
  m.doc() = "tandem, a digital twin of parallel training: plan, sim and compare, returning what --json prints";
  static py::exception<tandem::Error> error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tandem::Error& e) {
      PyErr_SetObject(error.ptr(), py::make_tuple(std::string(e.what()), e.exit_code()).ptr());
    }
  });
  m.def("plan", &plan, py::arg("scenario"), py::arg("sets") = py::none(), py::kw_only(),
        py::arg("max_memory_gib") = py::none(),
        "The plan of SCENARIO with --set overrides SETS: the object `tandem plan --json` prints.");
  m.def("sim", &sim, py::arg("scenario"), py::arg("sets") = py::none(), py::kw_only(), py::arg("algorithm") = "auto",
        py::arg("protocol") = "auto", py::arg("ideal_network") = false, py::arg("calibration") = "",
        py::arg("trace") = "", py::arg("max_memory_gib") = py::none(), py::arg("max_time") = "1h",
        "Simulates SCENARIO with --set overrides SETS: the object `tandem sim --json` prints.");
  m.def("compare", &compare, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("allow_different_scenarios") = false,
        "Compares trace A (the prediction) with trace B (the reference): the object `tandem compare --json` prints.");
}
