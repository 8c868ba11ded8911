#!/usr/bin/env python3
"""Runs the test suite of a CMake build directory without ctest (for machines
that have the build but no cmake), the way ctest would.

The tests come from the build's CTestTestfile.cmake files: command, ENVIRONMENT,
ENVIRONMENT_MODIFICATION, WORKING_DIRECTORY, TIMEOUT, SKIP_RETURN_CODE,
WILL_FAIL, DISABLED, REQUIRED_FILES (failed when missing, as in ctest),
RUN_SERIAL and the PASS/FAIL/SKIP regular expressions are honoured, so tests
that force kernel variants through their environment (VKATTN_PREFER_TEXELS=0,
VKATTN_MEMORY=device, ...) run as under ctest. A build copied to another folder still runs: the source and build
folders recorded in the files are replaced by the ones here, and the build
folder goes first in LD_LIBRARY_PATH (the binaries' RUNPATH names the old one).
Tests that need tools this machine lacks (REQUIREMENTS below) are skipped and
say why. Prints one line per test, then "N passed, N failed, N skipped"; writes
every test's output to --log. Exit status 0 when nothing failed.

--split-cost S runs each test whose COST is at least S as one process per cmocka
test in it (their names read from tests/<program>.c, each selected with
VKATTN_TEST_FILTER, within the test's own filter and skip), reported as
"test/function": on a machine with many cores a long binary's tests then run at
once instead of one after another (the GPU check: test_attention alone took
126 s for its first three tests on the H200, and five such binaries did not
finish in its time).
"""
import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

# What some tests need beyond the build and a Vulkan device. A test whose needs
# are not met is skipped, with the reason.
SPIRV_TOOLS = [
    ("glslangValidator (glslang-tools)", lambda: shutil.which("glslangValidator")),
    ("spirv-opt and spirv-dis (spirv-tools)",
     lambda: shutil.which("spirv-opt") and shutil.which("spirv-dis")),
]
REQUIREMENTS = {
    "test_install": [
        ("cmake", lambda: shutil.which("cmake")),
        ("a C compiler (cc)", lambda: shutil.which("cc")),
        ("pkg-config", lambda: shutil.which("pkg-config")),
        ("the Vulkan headers and vulkan.pc (libvulkan-dev)",
         lambda: shutil.which("pkg-config") and subprocess.run(
             ["pkg-config", "--exists", "vulkan"]).returncode == 0),
    ],
    # A check of the build (the KHR rewrite of the coopmat kernels' SPIR-V),
    # not of the device: ctest registers it only where spirv-val was found,
    # and a GPU machine that runs the build made elsewhere may lack it.
    "coopmat_khr": [
        ("spirv-val (spirv-tools)", lambda: shutil.which("spirv-val")),
    ],
    # Checks of the build's SPIR-V (coopmat_indexing_test.py,
    # uniform_control_test.py), likewise: they compile planted modules and
    # optimize and disassemble the kernels.
    "coopmat_indexing": SPIRV_TOOLS,
    "uniform_control": SPIRV_TOOLS,
}


# ---- reading CTestTestfile.cmake ---------------------------------------------------

def cmake_commands(text, origin):
    """Yields (command name, [arguments]) of a CMake script as ctest writes them:
    bracket, quoted and unquoted arguments, # comments."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            i = text.find("\n", i)
            i = n if i < 0 else i
        else:
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[i:])
            if not m:
                raise ValueError(f"{origin}: cannot read at offset {i}: {text[i:i + 40]!r}")
            name = m.group(0).lower()
            i += len(name)
            while text[i].isspace():
                i += 1
            if text[i] != "(":
                raise ValueError(f"{origin}: no '(' after {name}")
            i += 1
            args, depth = [], 0
            while True:
                while text[i].isspace():
                    i += 1
                c = text[i]
                if c == ")" and depth == 0:
                    i += 1
                    break
                b = re.match(r"\[(=*)\[", text[i:])
                if b:
                    end = text.index("]" + b.group(1) + "]", i)
                    args.append(text[i + len(b.group(0)):end])
                    i = end + len(b.group(0))
                elif c == '"':
                    i += 1
                    out = []
                    while text[i] != '"':
                        if text[i] == "\\":
                            e = text[i + 1]
                            # \; stays escaped: it matters when the value is a list
                            out.append({"n": "\n", "t": "\t", "r": "\r", ";": "\\;"}.get(e, e))
                            i += 2
                        else:
                            if text.startswith("${", i):
                                raise ValueError(f"{origin}: a variable reference in {name}()")
                            out.append(text[i])
                            i += 1
                    i += 1
                    args.append("".join(out))
                else:
                    m = re.match(r'[^\s()"]+', text[i:])
                    if c == "(":
                        depth += 1
                        i += 1
                        continue
                    if c == ")":
                        depth -= 1
                        i += 1
                        continue
                    args.append(m.group(0))
                    i += len(m.group(0))
            yield name, args


def cmake_list(value):
    """A CMake list: split on ';' not escaped as '\\;'."""
    return [part.replace("\\;", ";") for part in re.split(r"(?<!\\);", value) if part != ""]


class Test:
    def __init__(self, name, command, directory):
        self.name = name
        self.command = command
        self.directory = directory
        self.props = {}

    def prop(self, key, default=None):
        return self.props.get(key, default)


def read_tests(build_dir):
    """The tests of a build folder, in ctest's order, and the source and build
    folders the files were written for."""
    tests, recorded = [], {}

    def read(directory):
        path = os.path.join(directory, "CTestTestfile.cmake")
        if not os.path.isfile(path):
            return
        text = open(path).read()
        for key in ("Source", "Build"):
            m = re.search(rf"^# {key} directory: (.*)$", text, re.M)
            if m and directory == build_dir:
                recorded[key.lower()] = m.group(1).strip()
        by_name = {}
        for name, args in cmake_commands(text, path):
            if name == "add_test":
                t = Test(args[0], args[1:], directory)
                tests.append(t)
                by_name[t.name] = t
            elif name == "set_tests_properties":
                k = args.index("PROPERTIES")
                pairs = args[k + 1:]
                for test_name in args[:k]:
                    for key, value in zip(pairs[0::2], pairs[1::2]):
                        by_name[test_name].props[key] = value
            elif name == "subdirs":
                for sub in args:
                    read(sub if os.path.isabs(sub) else os.path.join(directory, sub))
            elif name in ("include", "set_directory_properties"):
                pass
            else:
                raise ValueError(f"{path}: {name}() is not understood by this runner "
                                 "(a multi-config build? use a single-config one)")

    read(build_dir)
    return tests, recorded


def relocate(tests, recorded, source_dir, build_dir):
    """Replaces the recorded source and build folders by those given."""
    mapping = {}
    if recorded.get("build") and recorded["build"] != build_dir:
        mapping[recorded["build"]] = build_dir
    if recorded.get("source") and recorded["source"] != source_dir:
        mapping[recorded["source"]] = source_dir
    if not mapping:
        return False
    pattern = re.compile("|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)))

    def fix(s):
        return pattern.sub(lambda m: mapping[m.group(0)], s)

    for t in tests:
        t.command = [fix(a) for a in t.command]
        t.directory = fix(t.directory)
        t.props = {k: fix(v) for k, v in t.props.items()}
    return True


# ---- running ----------------------------------------------------------------------

def test_env(t, base):
    env = dict(base)
    for item in cmake_list(t.prop("ENVIRONMENT", "")):
        key, _, value = item.partition("=")
        env[key] = value
    for item in cmake_list(t.prop("ENVIRONMENT_MODIFICATION", "")):
        key, op, value = re.match(r"([^=]*)=([a-z_]+):(.*)", item, re.S).groups()
        old = env.get(key)
        if op == "reset":
            env.pop(key, None) if key not in base else env.__setitem__(key, base[key])
        elif op == "set":
            env[key] = value
        elif op == "unset":
            env.pop(key, None)
        elif op == "string_append":
            env[key] = (old or "") + value
        elif op == "string_prepend":
            env[key] = value + (old or "")
        elif op in ("path_list_append", "path_list_prepend", "cmake_list_append",
                    "cmake_list_prepend"):
            sep = ":" if op.startswith("path") else ";"
            parts = [old] if old else []
            env[key] = sep.join(parts + [value] if op.endswith("append") else [value] + parts)
        else:
            raise ValueError(f"{t.name}: ENVIRONMENT_MODIFICATION op {op} not understood")
    # The build machine's preloads (jemalloc, for lavapipe's compile times) where
    # this machine has them: a missing one would put the loader's complaint in
    # every process's output.
    if "LD_PRELOAD" in env:
        kept = [p for p in env["LD_PRELOAD"].split(":") if p and os.path.exists(p)]
        if kept:
            env["LD_PRELOAD"] = ":".join(kept)
        else:
            del env["LD_PRELOAD"]
    return env


def why_not_run(t):
    """A reason to skip the test on this machine, or None."""
    if t.prop("DISABLED", "").upper() in ("1", "ON", "TRUE", "YES"):
        return "DISABLED"
    lacking = [what for what, ok in REQUIREMENTS.get(t.name.split("/")[0], []) if not ok()]
    if lacking:
        return "this machine lacks " + ", ".join(lacking)
    return None


def run_one(t, base_env, timeout_cap, deadline):
    """(status, seconds, output, detail): status passed|failed|skipped. deadline:
    time.monotonic() by which every test must have ended (None: no limit)."""
    reason = why_not_run(t)
    if reason:
        return "skipped", 0.0, "", reason
    missing = [f for f in cmake_list(t.prop("REQUIRED_FILES", "")) if not os.path.exists(f)]
    if missing:  # as ctest: not run, and counted as failed
        return "failed", 0.0, "", "not run: required files missing: " + ", ".join(missing)
    program = t.command[0]
    if not (os.path.isfile(program) or shutil.which(program)):
        return "failed", 0.0, "", f"cannot find the program {program}"
    timeout = float(t.prop("TIMEOUT", 1500))  # ctest's default
    if timeout_cap:
        timeout = min(timeout, timeout_cap) if timeout > 0 else timeout_cap
    if deadline is not None:
        left = deadline - time.monotonic()
        if left < 1:
            return "failed", 0.0, "", "not started: the run's --deadline had passed"
        timeout = min(timeout, left) if timeout > 0 else left
    start = time.monotonic()
    try:
        r = subprocess.run(t.command, cwd=t.prop("WORKING_DIRECTORY", t.directory),
                           env=test_env(t, base_env), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        return "failed", time.monotonic() - start, out, f"timed out after {timeout:.0f} s"
    seconds = time.monotonic() - start
    out = r.stdout.decode(errors="replace")
    rc = r.returncode
    skip_rc = t.prop("SKIP_RETURN_CODE")
    if skip_rc is not None and rc == int(skip_rc):
        return "skipped", seconds, out, f"exit status {rc} (SKIP_RETURN_CODE)"
    for key in ("SKIP_REGULAR_EXPRESSION",):
        if any(re.search(p, out) for p in cmake_list(t.prop(key, ""))):
            return "skipped", seconds, out, "output matches SKIP_REGULAR_EXPRESSION"
    if rc < 0:
        return "failed", seconds, out, f"killed by signal {-rc}"
    passed = rc == 0
    detail = f"exit status {rc}"
    pass_re = cmake_list(t.prop("PASS_REGULAR_EXPRESSION", ""))
    if pass_re:
        passed = any(re.search(p, out) for p in pass_re)
        detail = "output matches PASS_REGULAR_EXPRESSION" if passed else \
                 "output does not match PASS_REGULAR_EXPRESSION"
    if any(re.search(p, out) for p in cmake_list(t.prop("FAIL_REGULAR_EXPRESSION", ""))):
        passed, detail = False, "output matches FAIL_REGULAR_EXPRESSION"
    if t.prop("WILL_FAIL", "").upper() in ("1", "ON", "TRUE", "YES"):
        passed = not passed
        detail += " (WILL_FAIL)"
    return ("passed" if passed else "failed"), seconds, out, detail


CMOCKA_TEST = re.compile(r"\bcmocka_unit_test(?:_setup_teardown|_setup|_teardown)?\(\s*(\w+)")


def cmocka_functions(source_dir, program):
    """The cmocka tests a test program runs, in order, read from its source
    (tests/<program>.c); [] where there is none (a script, another layout)."""
    path = os.path.join(source_dir, "tests", os.path.basename(program) + ".c")
    try:
        with open(path) as f:
            return CMOCKA_TEST.findall(f.read())
    except OSError:
        return []


def cmocka_matches(name, patterns):
    """Whether name matches one of the comma-separated patterns, as
    tests/test_util.c chooses tests: the whole name, '*' any run of characters,
    '?' any one."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns.split(",") if p)


def split_by_function(t, source_dir, base_env):
    """t as one Test per cmocka test it runs (VKATTN_TEST_FILTER=that name), or
    [t] where it runs fewer than two. Which ones: those the test would run here,
    under VKATTN_TEST_FILTER and VKATTN_TEST_SKIP from its ENVIRONMENT or this
    run's environment. Each part gets the test's COST over the parts' count, so
    that the scheduler still starts the longest processes first."""
    if re.search(r"(^|;)VKATTN_TEST_(FILTER|SKIP)=", t.prop("ENVIRONMENT_MODIFICATION", "")):
        return [t]  # a filter the parts' own would not override
    env = test_env(t, base_env)
    want, skip = env.get("VKATTN_TEST_FILTER"), env.get("VKATTN_TEST_SKIP")
    names = [n for n in cmocka_functions(source_dir, t.command[0])
             if (not want or cmocka_matches(n, want)) and not (skip and cmocka_matches(n, skip))]
    if len(names) < 2:
        return [t]
    kept = [item for item in cmake_list(t.prop("ENVIRONMENT", ""))
            if not item.startswith(("VKATTN_TEST_FILTER=", "VKATTN_TEST_SKIP="))]
    cost = float(t.prop("COST", "0") or 0) / len(names)
    parts = []
    for n in names:
        part = Test(f"{t.name}/{n}", t.command, t.directory)
        part.props = dict(t.props)
        # The parts run only their own function: an exported skip must not
        # leave it out (it was applied above).
        part.props["ENVIRONMENT"] = ";".join(item.replace(";", "\\;") for item in
                                             kept + [f"VKATTN_TEST_FILTER={n}", "VKATTN_TEST_SKIP="])
        part.props["COST"] = f"{cost:g}"
        parts.append(part)
    return parts


def describe(t):
    return {"name": t.name, "command": t.command,
            "working_directory": t.prop("WORKING_DIRECTORY", t.directory),
            "properties": t.props}


def compare_with_ctest(tests, build_dir):
    """Checks this reader against `ctest --show-only=json-v1` (where ctest exists)."""
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, check=True,
                         capture_output=True, text=True).stdout
    theirs = {t["name"]: t for t in json.loads(out)["tests"]}
    problems = []
    if [t.name for t in tests] != list(theirs):
        problems.append(f"names differ: {[t.name for t in tests]} vs {list(theirs)}")
    for t in tests:
        c = theirs.get(t.name)
        if not c:
            continue
        command = [shutil.which(t.command[0]) or t.command[0]] + t.command[1:]
        if c.get("command") != command:
            problems.append(f"{t.name}: command {t.command} vs {c.get('command')}")
        props = {p["name"]: p["value"] for p in c.get("properties", [])}
        for key, value in props.items():
            mine = t.prop(key, t.directory if key == "WORKING_DIRECTORY" else None)
            if isinstance(value, list):
                mine = cmake_list(mine or "")
            elif isinstance(value, bool):
                mine = (mine or "").upper() in ("1", "ON", "TRUE", "YES")
            elif isinstance(value, (int, float)) and mine is not None:
                mine = type(value)(float(mine))
            if mine != value:
                problems.append(f"{t.name}: {key} {mine!r} vs ctest's {value!r}")
    for p in problems:
        print("differs from ctest: " + p)
    print(f"{len(tests)} tests read; " + ("the same as ctest's" if not problems else
                                          f"{len(problems)} differences from ctest"))
    return 1 if problems else 0


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"), help="the build folder")
    ap.add_argument("--source", default=root, help="the source folder (default: this checkout)")
    ap.add_argument("-R", "--include", help="only tests whose name matches this regex")
    ap.add_argument("-E", "--exclude", help="not the tests whose name matches this regex")
    ap.add_argument("-j", "--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=0,
                    help="cap on each test's TIMEOUT, seconds (0: the test's own)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="every test ends within this many seconds of the start; tests "
                         "not started by then fail (0: no limit)")
    ap.add_argument("--log", help="write every test's command, environment and output here")
    ap.add_argument("--link-build", action="store_true",
                    help="when the recorded build folder does not exist here, make it a "
                         "symbolic link to --build (for paths compiled into test programs)")
    ap.add_argument("--split-cost", type=float, default=0,
                    help="run each test whose COST is at least this as one process per cmocka "
                         "test in it (0: none)")
    ap.add_argument("--list", action="store_true", help="print the tests as JSON, run nothing")
    ap.add_argument("--compare-ctest", action="store_true",
                    help="check the tests read against ctest --show-only=json-v1, run nothing")
    args = ap.parse_args()
    build_dir, source_dir = os.path.abspath(args.build), os.path.abspath(args.source)

    tests, recorded = read_tests(build_dir)
    if not tests:
        print(f"run_tests: no tests in {build_dir} (no CTestTestfile.cmake)", file=sys.stderr)
        return 1
    if args.compare_ctest:
        return compare_with_ctest(tests, build_dir)
    base_env = dict(os.environ)
    moved = relocate(tests, recorded, source_dir, build_dir)
    notes = []
    if moved:
        old = recorded.get("build", "")
        notes.append(f"the build was made in {old} (source {recorded.get('source')}); "
                     f"paths rewritten to {build_dir} (source {source_dir})")
        ld = base_env.get("LD_LIBRARY_PATH")
        base_env["LD_LIBRARY_PATH"] = build_dir + (":" + ld if ld else "")
        if args.link_build and old and not os.path.lexists(old):
            os.makedirs(os.path.dirname(old), exist_ok=True)
            os.symlink(build_dir, old)
            notes.append(f"made {old} a link to {build_dir} (paths compiled into the tests)")
    if args.include:
        tests = [t for t in tests if re.search(args.include, t.name)]
    if args.exclude:
        tests = [t for t in tests if not re.search(args.exclude, t.name)]
    if args.split_cost > 0:
        tests = [part for t in tests
                 for part in (split_by_function(t, source_dir, base_env)
                              if float(t.prop("COST", "0") or 0) >= args.split_cost else [t])]
    if args.list:
        print(json.dumps([describe(t) for t in tests], indent=1))
        return 0

    log = open(args.log, "w") if args.log else None
    lock = threading.Lock()
    results = {}
    counter = [0]
    for note in notes:
        print("run_tests: " + note, flush=True)
        if log:
            log.write(f"note: {note}\n")
    print(f"run_tests: {len(tests)} tests from {build_dir}, {args.jobs} at a time"
          + (f", each capped at {args.timeout:.0f} s" if args.timeout else "")
          + (f", all within {args.deadline:.0f} s" if args.deadline else ""), flush=True)

    deadline = time.monotonic() + args.deadline if args.deadline else None

    def run(t):
        status, seconds, out, detail = run_one(t, base_env, args.timeout, deadline)
        with lock:
            counter[0] += 1
            results[t.name] = (status, seconds, detail)
            line = f"[{counter[0]}/{len(tests)}] {t.name:<48} {status:<8} {seconds:7.1f} s"
            if status != "passed":
                line += f"  ({detail})"
            print(line, flush=True)
            if status == "failed" and out.strip():
                tail = out.strip().splitlines()[-25:]
                print("\n".join("    | " + l for l in tail), flush=True)
            if log:
                env = {k: v for k, v in test_env(t, base_env).items() if base_env.get(k) != v}
                log.write(f"\n===== {t.name}: {status}, {seconds:.1f} s, {detail}\n"
                          f"command: {' '.join(t.command)}\n"
                          f"directory: {t.prop('WORKING_DIRECTORY', t.directory)}\n"
                          f"environment set: {env}\n{out}")
                log.flush()

    start = time.monotonic()
    serial = [t for t in tests if t.prop("RUN_SERIAL", "").upper() in ("1", "ON", "TRUE", "YES")]
    parallel = [t for t in tests if t not in serial]
    # The costliest first, as ctest -j starts them (tests/CMakeLists.txt sets COST):
    # the longest test started last would end the run alone.
    parallel.sort(key=lambda t: -float(t.prop("COST", "0") or 0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(run, parallel))
    for t in serial:
        run(t)

    count = {s: sum(1 for r in results.values() if r[0] == s) for s in ("passed", "failed", "skipped")}
    lines = [f"{name}: skipped, {r[2]}" for name, r in results.items() if r[0] == "skipped"]
    lines += [f"{name}: FAILED, {r[2]}" for name, r in results.items() if r[0] == "failed"]
    lines.append(f"total {time.monotonic() - start:.1f} s")
    summary = f"{count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
    for line in lines:
        print("run_tests: " + line)
    print(summary, flush=True)
    if log:
        log.write("\n" + "\n".join(lines) + "\n" + summary + "\n")
        log.close()
    return 1 if count["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
