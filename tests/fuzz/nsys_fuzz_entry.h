// The fuzz entry for the Nsight Systems importer (`gpuattr import` of an `nsys export --type
// sqlite` database): one input through the importer, the replay into ProcessTrace and the report
// builder, as import_fuzz_entry.h does for Kineto JSON. Shared by the libFuzzer driver and the
// fuzz-smoke test. Single-threaded.
//
// An input that starts with SQLite's file header is the database file itself (corrupt pages,
// hostile headers). Any other input is SQL text that builds the database: tables of the export's
// schema or any other, rows of any type, NULLs, huge and negative values, duplicate ids. The SQL
// runs in an in-memory database (ATTACH refused, so it cannot reach a file; a step budget stops
// runaway queries), which is then serialized into a file that the importer opens as it opens an
// export. SQL the engine refuses is a refused input.
#ifndef GPUATTR_TESTS_FUZZ_NSYS_FUZZ_ENTRY_H_
#define GPUATTR_TESTS_FUZZ_NSYS_FUZZ_ENTRY_H_

#include <cstddef>
#include <cstdint>

namespace gpuattr::fuzz {

// Returns true when the input was imported (and a report was built), false when it was refused:
// SQL that does not run, or a database the importer refuses as data loss. Crashing, hanging, a
// failed internal check or another kind of error is the bug to find: it aborts.
bool ImportNsysBytes(const uint8_t* data, size_t size);

}  // namespace gpuattr::fuzz

#endif  // GPUATTR_TESTS_FUZZ_NSYS_FUZZ_ENTRY_H_
