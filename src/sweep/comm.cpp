// Parts of the communicator shared by the serial and the MPI build.
#include <cstdlib>
#include <string>
#include <thread>

#include "hdat/sweep/comm.hpp"

namespace hdat::sweep {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

int Communicator::default_threads() const {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Ranks that share a node share its cores (Open MPI, MPICH/Hydra and Slurm name the local count).
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* s = std::getenv(v)) {
      const int local = std::atoi(s);
      if (local > 0) return std::max(1, cores / local);
    }
  return size() > 1 ? 1 : cores;
}

}  // namespace hdat::sweep
