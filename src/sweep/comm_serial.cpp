// The single-process communicator of builds without MPI (HDAT_MPI=OFF).
#include <fmt/format.h>

#include <cstdio>

#include "hdat/sweep/comm.hpp"

namespace hdat::sweep {

bool mpi_compiled() { return false; }

std::unique_ptr<Communicator> open_communicator() {
  if (launched_by_mpi())
    fmt::print(stderr, "hdat: started by an MPI launcher, but this hdat was built without MPI (cmake -DHDAT_MPI=ON); "
                       "every rank would run the whole sweep, so each runs it as a single process\n");
  return std::make_unique<Communicator>();
}

}  // namespace hdat::sweep
