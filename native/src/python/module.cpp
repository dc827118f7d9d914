// autopager._native: the bindings behind autopager/pager.py and autopager/array.py. Python code
// should use those; this module only exposes the native objects with the GIL released around
// anything that may wait for the store.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "autopager/autopager.hpp"
#include "copy_on_write_store.hpp"
#include "errors.hpp"
#include "region.hpp"
#include "scratch_store.hpp"

namespace py = pybind11;
using namespace autopager;
using autopager::python::Region;

namespace {

py::dict stats_to_dict(const Stats& stats) {
  py::dict out;
  out["page_size"] = stats.page_size;
  out["read_only_page_size"] = stats.read_only_page_size;
  out["read_ahead_run_bytes"] = stats.read_ahead_run_bytes;
  out["read_faults"] = stats.read_faults;
  out["write_faults"] = stats.write_faults;
  out["fills"] = stats.fills;
  out["read_around_pages"] = stats.read_around_pages;
  out["reads"] = stats.reads;
  out["bytes_read"] = stats.bytes_read;
  out["evictions"] = stats.evictions;
  out["write_backs"] = stats.write_backs;
  out["bytes_written"] = stats.bytes_written;
  out["write_errors"] = stats.write_errors;
  out["read_errors"] = stats.read_errors;
  out["resident_bytes"] = stats.resident_bytes;
  out["peak_resident_bytes"] = stats.peak_resident_bytes;
  out["dirty_pages"] = stats.dirty_pages;
  out["policy_refaults"] = stats.policy_refaults;
  out["policy_promotions"] = stats.policy_promotions;
  out["policy_second_chances"] = stats.policy_second_chances;
  out["policy_demotions"] = stats.policy_demotions;
  out["victim_hits"] = stats.victim_hits;
  out["fault_service_mean_us"] = stats.fault_service_mean_us;
  out["fault_service_p99_us"] = stats.fault_service_p99_us;
  return out;
}

void flush_pager(Pager& pager) {
  int error = 0;
  {
    py::gil_scoped_release unlocked;
    if (pager.flush() != 0) error = errno;
  }
  if (error != 0) throw std::system_error(error, std::generic_category(), "writing back dirty pages failed");
}

std::shared_ptr<Store> file_store(const std::string& path, bool writable, std::uint64_t offset,
                                  std::uint64_t length, bool direct) {
  FileStoreOptions options;
  options.writable = writable;
  options.direct = direct;
  options.offset = offset;
  options.length = length;
  return make_file_store(path, options);
}

std::shared_ptr<Store> multi_file_store(const std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>>& parts,
                                        bool writable, bool direct) {
  std::vector<FileSegment> segments;
  segments.reserve(parts.size());
  for (const auto& [path, offset, length] : parts) segments.push_back(FileSegment{path, offset, length});
  return make_multi_file_store(segments, writable, direct);
}

void bind_config(py::module_& m) {
  py::class_<Config>(m, "Config", "Paging parameters of one pager (see DESIGN.md); buffer in pages.")
      .def(py::init<>())
      .def_static("defaults", &Config::defaults, "A buffer of 80% of the memory this process can use (within its memory cgroup) in pages of page_size_for_buffer(its bytes); hardware threads.")
      .def_static("from_environment", [] { return Config::from_environment(); },
                  "The defaults overridden by every UMAP_* variable that is set (ValueError on a bad one).")
      .def_readwrite("page_size", &Config::page_size)
      .def_readwrite("read_only_page_size", &Config::read_only_page_size)
      .def_readwrite("fillers", &Config::fillers)
      .def_readwrite("evictors", &Config::evictors)
      .def_readwrite("buffer_pages", &Config::buffer_pages)
      .def_readwrite("evict_high_water", &Config::evict_high_water)
      .def_readwrite("evict_low_water", &Config::evict_low_water)
      .def_readwrite("evict_retain", &Config::evict_retain)
      .def_property(
          "eviction", [](const Config& c) { return std::string(eviction_name(c.eviction)); },
          [](Config& c, const std::string& name) { c.eviction = eviction_from_name(name); },
          "The eviction policy: fifo, hotfifo, s3fifo or clock (ValueError naming UMAP_EVICTION otherwise).")
      .def_readwrite("read_ahead", &Config::read_ahead)
      .def_readwrite("read_ahead_run", &Config::read_ahead_run)
      .def_readwrite("read_around", &Config::read_around)
      .def_readwrite("max_fault_events", &Config::max_fault_events)
      .def_readwrite("direct_io", &Config::direct_io)
      .def_readwrite("keep_writes", &Config::keep_writes)
      .def_property(
          "compression", [](const Config& c) { return std::string(compression_name(c.compression)); },
          [](Config& c, const std::string& name) {
            if (!parse_compression(name, &c.compression))
              throw py::value_error("compression='" + name + "' is not a compression; allowed: none, lz4, zstd");
          },
          "none, lz4 or zstd: how the pages of NBD stores are stored (open_nbd_store)")
      .def_property(
          "huge_pages", [](const Config& c) { return std::string(huge_pages_name(c.huge_pages)); },
          [](Config& c, const std::string& name) { c.huge_pages = huge_pages_from_name(name); },
          "off, on or auto: regions' page memory in 2 MiB huge pages (ValueError naming UMAP_HUGE_PAGES otherwise)")
      .def("validate", &Config::validate, "Raises ValueError naming a value out of range.")
      .def("buffer_bytes", &Config::buffer_bytes)
      .def("__repr__", &Config::to_string);
}

void bind_parameter_limits(py::module_& m) {
  py::class_<ParameterLimits>(m, "ParameterLimits", "One parameter's limits as Config.validate checks them.")
      .def_readonly("name", &ParameterLimits::name)
      .def_readonly("env", &ParameterLimits::env)
      .def_readonly("min", &ParameterLimits::min)
      .def_readonly("max", &ParameterLimits::max)
      .def_readonly("unit", &ParameterLimits::unit)
      .def_readonly("zero_turns_off", &ParameterLimits::zero_turns_off);
  m.def("parameter_limits", &parameter_limits,
        "Each parameter's limits as Config.validate checks them (autopager.parameters.PARAMETER_TABLE holds the same).");
}

void bind_stores(py::module_& m) {
  py::class_<Store, std::shared_ptr<Store>>(m, "Store", "Where a region's bytes live.")
      .def_property_readonly("size", &Store::size)
      .def_property_readonly("writable", &Store::writable);
  m.def("file_store", &file_store, py::arg("path"), py::arg("writable"), py::arg("offset") = 0,
        py::arg("length") = 0, py::arg("direct") = false,
        "A file, or `length` bytes of it from `offset` (0: to its end).");
  m.def("multi_file_store", &multi_file_store, py::arg("segments"), py::arg("writable"), py::arg("direct") = false,
        "(path, offset, length) segments seen as one contiguous store, in order.");
  m.def("memory_store", &make_memory_store, py::arg("size"), "`size` bytes of this process's memory.");
  m.def("nbd_store",
        [](const std::string& uri, const Config& config) {
          py::gil_scoped_release unlocked;  // connecting may wait for the server
          return open_nbd_store(uri, config.compression, config.page_size);
        },
        py::arg("uri"), py::arg("config"),
        "The NBD export `uri`, its pages compressed as config.compression says (RuntimeError when it cannot connect).");
  m.def("is_nbd_uri", &is_nbd_uri, py::arg("text"), "Whether `text` is an NBD URI (nbd://, nbd+unix://, ...).");
  m.def("window_store", &make_window_store, py::arg("store"), py::arg("offset"), py::arg("length"),
        "`length` bytes of `store` from `offset`.");
  m.def("scratch_store",
        [](const std::string& directory, std::uint64_t size) -> std::shared_ptr<Store> {
          return std::make_shared<python::ScratchStore>(directory, size);
        },
        py::arg("directory"), py::arg("size"), "An unlinked, zero-filled file of `size` bytes in `directory`.");
  m.def("copy_on_write_store",
        [](std::shared_ptr<Store> base, const std::string& scratch_directory) -> std::shared_ptr<Store> {
          return std::make_shared<python::CopyOnWriteStore>(std::move(base), scratch_directory);
        },
        py::arg("base"), py::arg("scratch_directory"),
        "Reads `base`; keeps writes in a scratch file in `scratch_directory`, never in `base`.");
}

void bind_pager(py::module_& m) {
  py::class_<Pager, std::shared_ptr<Pager>>(m, "Pager", "One buffer and one set of threads for any number of regions.")
      .def(py::init([](const Config& config) {
             py::gil_scoped_release unlocked;
             return std::make_shared<Pager>(config);
           }),
           py::arg("config"))
      .def("flush", &flush_pager, "Writes back every dirty page of every region.")
      .def("stats", [](const Pager& pager) { return stats_to_dict(pager.stats()); })
      .def_property_readonly("config", [](const Pager& pager) { return Config(pager.config()); })
      .def_property_readonly("has_write_protect", &Pager::has_write_protect);
}

void bind_region(py::module_& m) {
  py::class_<Region>(m, "Region", py::buffer_protocol(),
                     "A store mapped by a pager: a flat buffer of bytes, unmapped once nothing uses it.")
      .def(py::init([](std::shared_ptr<Pager> pager, std::shared_ptr<Store> store, std::size_t length, bool writable) {
             py::gil_scoped_release unlocked;
             return std::make_unique<Region>(std::move(pager), std::move(store), length, writable);
           }),
           py::arg("pager"), py::arg("store"), py::arg("length"), py::arg("writable"))
      .def_buffer(&Region::buffer)
      .def("flush", &Region::flush, py::call_guard<py::gil_scoped_release>(),
           "Writes back this region's dirty pages.")
      .def_property_readonly("address", [](const Region& r) { return reinterpret_cast<std::uintptr_t>(r.data()); })
      .def_property_readonly("length", &Region::length)
      .def_property_readonly("writable", &Region::writable)
      .def_property_readonly("pager", &Region::pager);
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Native pager bindings for autopager (use autopager.memmap and autopager.Pager).";
  python::register_error_translation();
  m.def("version", [] { return std::string(version()); });
  m.def("read_path", [] { return std::string(read_path()); });
  m.def("system_page_size", &system_page_size);
  m.def("page_size_for_buffer", &page_size_for_buffer, py::arg("buffer_bytes"),
        "The page size of writable regions when none is given: the buffer / 1024 within [system page, 1 MiB].");
  m.def("read_only_page_size_for_buffer", &read_only_page_size_for_buffer, py::arg("buffer_bytes"),
        "The page size of read-only regions when none is given: the system page, doubled while the buffer would "
        "hold more than 4 Mi pages.");
  m.def("hardware_threads", &hardware_threads);
  bind_config(m);
  bind_parameter_limits(m);
  bind_stores(m);
  bind_pager(m);
  bind_region(m);
}
