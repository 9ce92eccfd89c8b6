// Your own model with hdat's command line: register it, then hand the arguments to hdat's front end.
//   teacher_student curve teacher-student --out DIR
//   teacher_student validate teacher-student --set eta=1 --out DIR          (exit 0 agree, 1 disagree, 5 undecided)
//   teacher_student validate teacher-student --set mode=drift --out DIR
//   teacher_student sweep teacher-student --grid 'eta=[0.25,0.5,1]' --out DIR
//   teacher_student plot DIR
// (hdat's own models as well with hdat::register_models(): link hdat::models.)
#include "hdat/app/command_line.hpp"
#include "hdat/core/registry.hpp"
#include "linear_teacher_student.hpp"

int main(int argc, char** argv) {
  hdat::registry().add(teacher_student::entry());
  return hdat::app::command_line(argc, argv);
}
