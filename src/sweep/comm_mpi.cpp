// The MPI communicator (compiled only with HDAT_MPI=ON): ranks split the grid, rank 0 gathers.
// Only the main thread of each rank calls MPI (MPI_THREAD_FUNNELED); the point threads never do.
#include <mpi.h>

#include <limits>
#include <stdexcept>

#include "hdat/sweep/comm.hpp"

namespace hdat::sweep {

namespace {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }

  std::vector<std::string> gather(const std::string& mine) override {
    if (mine.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw std::runtime_error("MPI gather: a rank's rows exceed 2 GB");
    int n = static_cast<int>(mine.size());
    std::vector<int> sizes(rank_ == 0 ? size_ : 0), offsets(rank_ == 0 ? size_ : 0);
    MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<char> all;
    if (rank_ == 0) {
      long total = 0;
      for (int r = 0; r < size_; ++r) offsets[r] = static_cast<int>(total), total += sizes[r];
      if (total > std::numeric_limits<int>::max()) throw std::runtime_error("MPI gather: the rows exceed 2 GB");
      all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    if (rank_ == 0)
      for (int r = 0; r < size_; ++r) out.emplace_back(all.data() + offsets[r], static_cast<std::size_t>(sizes[r]));
    return out;
  }

  void abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

  int broadcast(int value) override {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
  }

  bool any(bool flag) override {
    int in = flag ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out != 0;
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool mpi_compiled() { return true; }

std::unique_ptr<Communicator> open_communicator() {
  // Outside mpirun a plain process: no MPI start-up cost, no dependency on a launcher.
  if (!launched_by_mpi()) return std::make_unique<Communicator>();
  return std::make_unique<MpiCommunicator>();
}

}  // namespace hdat::sweep
