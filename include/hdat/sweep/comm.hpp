#pragma once
// The processes a sweep runs on. Without MPI (or when the program was not started by mpirun) there is
// one process; with the HDAT_MPI build under `mpirun -n N`, N ranks split the grid round robin by
// point index and rank 0 gathers the rows and writes the folder. Built from src/sweep/comm_mpi.cpp
// (HDAT_MPI=ON) or src/sweep/comm_serial.cpp.
#include <memory>
#include <string>
#include <vector>

namespace hdat::sweep {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  virtual std::string kind() const { return "threads"; }
  /// Rank 0 receives every rank's text (in rank order); the others get an empty list.
  virtual std::vector<std::string> gather(const std::string& mine) { return {mine}; }
  /// Rank 0's value on every rank.
  virtual int broadcast(int value) { return value; }
  /// Logical or of a flag over ranks.
  virtual bool any(bool flag) { return flag; }
  /// Stop every rank after an error on this one (MPI_Abort); a single process returns and throws on.
  virtual void abort(int code) { (void)code; }
  /// Suggested threads per rank when the user gave none: the cores of a node shared by its ranks.
  virtual int default_threads() const;
};

/// Was this binary built with MPI support?
bool mpi_compiled();
/// Was this process started by an MPI launcher (mpirun / srun with PMI)?
bool launched_by_mpi();
/// The world communicator (initialises MPI when built with it and launched by mpirun; finalises it when
/// the returned object is destroyed), or the single-process one.
std::unique_ptr<Communicator> open_communicator();

}  // namespace hdat::sweep
