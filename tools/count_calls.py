#!/usr/bin/python3
"""How often a command calls given functions, and from where: a measurement on the unmodified program
(gdb breakpoints on the functions' symbols; nothing is rebuilt or instrumented).

    tools/count_calls.py [--hdat PATH] [--depth N] -f FUNCTION [-f FUNCTION]... -- ARGS...

  FUNCTION  a symbol as gdb names it, e.g. 'hdat::committee::setup_from'; a constructor as
            'hdat::committee::CommitteeODE::CommitteeODE'.
  ARGS      the hdat command line, e.g. validate committee --out /tmp/x --threads 1 --quiet

Prints, per function, the number of calls and the calls grouped by their callers: the first N
frames (default 4) of the stack above the function whose name is in hdat:: and is not a std::function
trampoline. Used for the construction and parse counts of issue 33 (docs/architecture.md,
"Refactoring: outputs before and after"). Functions inlined into their callers are not seen (a Release
build without -g): a count is a lower bound unless the symbol is an out-of-line function, which gdb
confirms by setting the breakpoint ("1 location"). Run with --threads 1.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

FRAME = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.+)$")


def short_name(demangled):
    """hdat::committee::dynamics_model()::{lambda(hdat::Params const&, int)#1}::operator()(...) const
    -> hdat::committee::dynamics_model::{lambda#1}"""
    name = demangled.replace("(anonymous namespace)", "anon")
    name = re.sub(r" at \S+$| from \S+$", "", name)
    name = re.sub(r"\{lambda\((?:[^(){}]|\([^(){}]*\))*\)#(\d+)\}", r"{lambda#\1}", name)
    while True:  # argument lists, innermost first
        stripped = re.sub(r"\([^()]*\)", "", name)
        if stripped == name:
            break
        name = stripped
    name = re.sub(r"\s*const$", "", name.strip())
    return re.sub(r"::operator$", "", name)


def caller_names(frames, depth):
    """The hdat frames above the breakpoint's own (the nearest with its return address, which tells
    two call sites in one function apart), trampolines and repeats dropped."""
    names = []
    for address, f in frames[1:]:
        name = short_name(f)
        if not name.startswith("hdat::") or "_M_invoke" in name or "_Function_handler" in name:
            continue
        if names and names[-1].split("@")[0] == name:
            continue
        names.append(f"{name}@{address}" if not names and address else name)
        if len(names) == depth:
            break
    return " < ".join(names) if names else "(no hdat caller)"


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hdat", default=os.path.join(here, "build", "hdat"))
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("-f", "--function", action="append", required=True)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args and a.args[0] == "--" else a.args
    if not args:
        ap.error("give the hdat command line after --")
    if not shutil.which("gdb"):
        print("count_calls: needs gdb (Debian package gdb)", file=sys.stderr)
        return 2
    script = ["set pagination off", "set print demangle on", "set print asm-demangle on", "set confirm off",
              "set breakpoint pending off"]
    for k, f in enumerate(a.function):
        script += [f"break '{f}'" if "(" in f else f"break {f}",
                   "commands", "silent", f'printf "@@HIT {k}\\n"', "bt 40", 'printf "@@END\\n"', "continue", "end"]
    script += ["run", "quit"]
    with tempfile.NamedTemporaryFile("w", suffix=".gdb", delete=False) as g:
        g.write("\n".join(script) + "\n")
    cmd = ["gdb", "-q", "-batch", "-x", g.name, "--args", a.hdat] + args
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    os.unlink(g.name)

    locations = re.findall(r"^Breakpoint (\d+) at .*$", out, re.M)
    if len(locations) != len(a.function):
        print(out[-4000:], file=sys.stderr)
        print("count_calls: a function was not found (see gdb's output above)", file=sys.stderr)
        return 2
    counts = [collections.Counter() for _ in a.function]
    current, frames = None, []
    for line in out.splitlines():
        if line.startswith("@@HIT "):
            current, frames = int(line.split()[1]), []
        elif line.startswith("@@END") and current is not None:
            counts[current][caller_names(frames, a.depth)] += 1
            current = None
        elif current is not None:
            m = FRAME.match(line)
            if m:
                frames.append((m.group(2), m.group(3)))
    exit_line = re.findall(r"\[Inferior 1 \(process \d+\) exited (?:normally|with code (\d+))\]", out)
    print(f"hdat {' '.join(args)}")
    print(f"exit code: {exit_line[-1] or 0 if exit_line else '?'}")
    for f, c in zip(a.function, counts):
        print(f"\n{sum(c.values()):5d}  {f}")
        for where, n in c.most_common():
            print(f"       {n:4d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
